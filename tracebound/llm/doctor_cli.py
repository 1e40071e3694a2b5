"""``tracebound doctor [--json]``: is the configured model endpoint fit for ``llm`` mode?

Why a command: a role falls back to its rules on every model failure, so a
server started without a tool parser, or a model that refuses ``temperature``,
looks healthy from the outside. The doctor probes the endpoint of the
``TRACEBOUND_LLM_*`` settings and prints, per check, what works and the exact
server flag or setting that is missing. Exit 0 when every required check
passed (warnings allowed), 1 when one failed; ``--json`` prints the report for
scripts.
"""

from __future__ import annotations

import argparse
import json

from tracebound.llm.probe import probe_endpoint
from tracebound.llm.probe_report import ProbeReport
from tracebound.llm.settings import LLMSettings

MARKS = {"ok": "ok", "warn": "WARN", "fail": "FAIL", "skip": "skip"}


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``doctor`` command to the main parser."""
    parser = subparsers.add_parser(
        "doctor",
        help="probe the model endpoint and say what is missing for llm mode",
        description=(
            "Probe the model endpoint of the TRACEBOUND_LLM_* settings: reachable, model "
            "name, tool calling, JSON mode, accepted parameters, context window. Prints "
            "the fix for each failed check; exit 1 when a required check failed."
        ),
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(handler=run_doctor)


def render(report: ProbeReport) -> str:
    """The report as aligned text lines, each failure followed by its fix."""
    target = report.target or "(no endpoint)"
    lines = [f"model endpoint {target}, model {report.model!r}"]
    width = max(len(check.name) for check in report.checks)
    for check in report.checks:
        lines.append(f"  {MARKS[check.status]:<4}  {check.name:<{width}}  {check.detail}")
        if check.fix and check.status in ("fail", "warn"):
            lines.append(f"        {'':<{width}}  fix: {check.fix}")
    failed = len(report.failures)
    if report.ok:
        lines.append("ready for llm mode")
    else:
        lines.append(f"NOT ready for llm mode: {failed} check(s) failed")
    return "\n".join(lines)


def run_doctor(args: argparse.Namespace) -> int:
    report = probe_endpoint(LLMSettings())
    if args.json:
        print(json.dumps(report.to_json(), ensure_ascii=False, indent=2))
    else:
        print(render(report))
    return 0 if report.ok else 1


__all__ = ["register", "render", "run_doctor"]
