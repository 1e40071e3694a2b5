"""``tracebound trace RUN_ID [--json]``: the trace of one run in the terminal; ``open RUN_ID``.

The JSON form is the very document ``GET /api/v1/runs/{run_id}/trace`` serves.
The text form reads top-down like the page: run, claims (each binding with its
excerpt, the recorded ref text and the gatekeeper's outcome, then the
verifier's judgement), answer, timings. Trace text comes from tools and models,
so control characters are shown escaped: a log line cannot move the cursor or
recolour the terminal. The text form ends with the URL of the run's page, and
``tracebound open RUN_ID`` (or ``reports/REPORT_ID``) opens that page in a browser.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import textwrap
import webbrowser
from collections.abc import Mapping
from typing import Any

import psycopg

from projections import trace
from projections.store import connect
from tracebound.errors import InvalidInputError, TransientError
from tracebound.events.base import RUN_ID
from tracebound.pages import PageAddress, page_path
from tracebound.settings import PostgresSettings
from tracebound.tracing.link import TraceLinkSettings

Trace = Mapping[str, Any]
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
WIDTH = 100
MARK = {
    "pass": "PASS",
    "fail": "FAIL",
    "backfilled": "BACK-FILLED",
    "skipped": "SKIPPED",
    "unchecked": "UNCHECKED",
}


def clean(value: Any) -> str:
    """Printable text of a trace value: control characters escaped, None as a dash."""
    if value is None:
        return "-"
    if not isinstance(value, str):
        value = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", value)


def _ms(value: Any) -> str:
    return f"{value} ms" if isinstance(value, int) else "-"


def _wrap(text: Any, indent: str) -> list[str]:
    lines: list[str] = []
    for part in clean(text).split("\n"):
        lines.extend(
            textwrap.wrap(part, WIDTH, initial_indent=indent, subsequent_indent=indent)
            or [indent.rstrip()]
        )
    return lines


def _run(t: Trace) -> list[str]:
    run = t.get("run") or {}
    tokens = (t.get("tokens") or {}).get("total") or {}
    resolved = [
        f"  resolved   {clean(a.get('alertname'))} ({clean(a.get('fingerprint'))})"
        f" fired {clean(a.get('startsAt'))}, ended {clean(a.get('endsAt'))}"
        for a in run.get("resolved_alerts") or []
    ]
    return [
        f"RUN {clean(run.get('run_id'))}",
        f"  query      {clean(run.get('query'))}",
        f"  status     {clean(run.get('status'))}   verdict {clean(run.get('verdict'))}"
        f"   final status {clean(run.get('final_status'))}",
        f"  mode       {clean(run.get('mode'))}   skill {clean(run.get('selected_skill'))}"
        f"   narrow scope {clean(run.get('narrow_scope'))}   rounds {clean(run.get('round'))}",
        f"  chosen     {clean((run.get('plan') or {}).get('selection_reason'))}",
        f"  requested  {clean(run.get('requested_at'))} by {clean(run.get('requested_by'))}"
        f"   latency {_ms(run.get('latency_ms'))}",
        f"  tokens     {clean(tokens.get('token_count'))}"
        f" (prompt {clean(tokens.get('prompt_tokens'))},"
        f" completion {clean(tokens.get('completion_tokens'))})",
        *resolved,
        *(
            f"  fallback   {clean(f.get('role'))}: rules fallback because: "
            f"{clean(f.get('kind'))}: {clean(f.get('reason'))}"
            for f in run.get("fallbacks") or []
        ),
    ]


def _binding(b: Mapping[str, Any]) -> list[str]:
    gate = b.get("gatekeeper") or {}
    status = str(gate.get("status"))
    lines = [
        f"    binding {clean(b.get('binding_index'))}: {clean(b.get('tool_name'))}"
        f" invocation {clean(b.get('source_invocation_id'))} {clean(b.get('raw_path'))}"
        f"   gatekeeper {MARK.get(status, clean(status))}"
    ]
    if gate.get("reason"):
        lines += _wrap(f"{gate.get('rule')}: {gate.get('reason')}", "      ! ")
    for note in gate.get("warnings") or []:
        lines += _wrap(f"{note.get('rule')}: {note.get('message')}", "      ~ ")
    cited = b.get("executor_cited")
    if cited:
        lines.append(
            f"      executor cited invocation {clean(cited.get('source_invocation_id'))}"
            f" {clean(cited.get('raw_path'))}"
        )
    lines.append("      excerpt:")
    lines += _wrap(b.get("evidence_excerpt"), "        ")
    if b.get("recorded_ref_status") == "found":
        lines.append("      recorded:")
        lines += _wrap(b.get("recorded_ref_text"), "        ")
    else:
        lines.append(f"      recorded: none ({clean(b.get('recorded_ref_status'))})")
    return lines


def _claims(t: Trace) -> list[str]:
    claims = list(t.get("claims") or [])
    lines = [f"CLAIMS ({len(claims)})"]
    for c in claims:
        verifier = c.get("verifier") or {}
        gate = c.get("gatekeeper") or {}
        lines.append(
            f"  [{clean(verifier.get('status') or 'NOT JUDGED')}] {clean(c.get('claim_id'))}"
            f" ({clean(c.get('claim_type'))})   gatekeeper"
            f" {MARK.get(str(gate.get('status')), clean(gate.get('status')))}"
        )
        lines += _wrap(c.get("claim_text"), "    ")
        if verifier:
            lines += _wrap(f"verifier: {clean(verifier.get('reason'))}", "    ")
            for f in verifier.get("facts") or []:
                outcome = f.get("outcome") or ("checked" if f.get("found") else "not stated")
                detail = f" ({clean(f.get('detail'))})" if f.get("detail") else ""
                lines += _wrap(f"fact {clean(f.get('fact'))}: {outcome}{detail}", "    ")
        for note in gate.get("errors") or []:
            lines += _wrap(f"{note.get('rule')}: {note.get('message')}", "    ! ")
        for b in c.get("bindings") or []:
            lines += _binding(b)
    gate = t.get("gatekeeper") or {}
    verifier = t.get("verifier") or {}
    lines.append(
        f"GATEKEEPER {clean(gate.get('status'))} / severity {clean(gate.get('severity'))}"
        f"   rule set {clean(gate.get('rule_set_version'))}"
        f"   failed rules {clean(', '.join(gate.get('failed_rules') or []) or None)}"
    )
    score = verifier.get("groundedness_score")
    lines.append(
        f"VERIFIER {clean(verifier.get('verdict'))}"
        f"   groundedness {f'{score:.2f}' if isinstance(score, float) else clean(score)}"
        f"   mode {clean(verifier.get('mode'))}   round {clean(verifier.get('round'))}"
    )
    if verifier.get("rationale"):
        lines += _wrap(verifier.get("rationale"), "  ")
    return lines


def _answer(t: Trace) -> list[str]:
    answer = t.get("answer")
    if not answer:
        return ["ANSWER none yet"]
    guard = answer.get("guard") or {}
    lines = [
        f"ANSWER {clean(answer.get('verdict'))}   guard {'ok' if guard.get('ok') else 'VIOLATED'}"
        f"{'   (answer replaced)' if guard.get('replaced') else ''}"
    ]
    lines += [f"  guard violation: {clean(v)}" for v in guard.get("violations") or []]
    lines += _wrap(answer.get("user_facing_answer"), "  ")
    for action in answer.get("recommended_actions") or []:
        text = action.get("action_text") if isinstance(action, Mapping) else action
        lines += _wrap(f"- {clean(text)}", "  action ")
    return lines


def _timings(t: Trace) -> list[str]:
    lines = ["TIMINGS"]
    for stage in t.get("timeline") or []:
        at = stage.get("at_ms")
        lines.append(
            f"  {clean(stage.get('label')):<12} {clean(stage.get('first'))}"
            f"  +{_ms(at) if isinstance(at, int) else '-':<10}"
            f" after previous {_ms(stage.get('since_previous_ms'))}"
        )
    lines.append("TOOL CALLS")
    for inv in t.get("tool_invocations") or []:
        lines.append(
            f"  {clean(inv.get('source_invocation_id'))} {clean(inv.get('tool_name'))}"
            f" round {clean(inv.get('round'))} {'ok' if inv.get('success') else 'FAILED'}"
            f" {clean(inv.get('evidence_status'))} via {clean(inv.get('backend'))}"
            f" {_ms(inv.get('duration_ms'))} {clean(inv.get('input_params'))}"
        )
    steps = t.get("agent_steps") or []
    if steps:
        lines.append("AGENT STEPS")
        for s in steps:
            lines.append(
                f"  {clean(s.get('agent_name'))}#{clean(s.get('step_index'))}"
                f"{' repair' if s.get('repair') else ''}"
                f" {clean(s.get('model'))} {_ms(s.get('duration_ms'))}"
                f" tokens {clean(s.get('token_count'))}"
                + (f" finish {clean(s['finish_reason'])}" if s.get("finish_reason") else "")
                + (f" [{clean(s['budget'])}]" if s.get("budget") else "")
            )
    return lines


def render_text(t: Trace) -> str:
    """The terminal view of a trace."""
    sections = [_run(t), _claims(t), _answer(t), _timings(t)]
    return "\n\n".join("\n".join(lines) for lines in sections) + "\n"


def _run_id(args: argparse.Namespace) -> str:
    if not RUN_ID.match(args.run_id):
        raise InvalidInputError(f"{args.run_id!r} is not a run id")
    return str(args.run_id)


def _cmd_trace(args: argparse.Namespace) -> int:
    run_id = _run_id(args)
    try:
        with connect(PostgresSettings()) as conn:
            found = trace.build_trace(conn, run_id)
    except psycopg.errors.UndefinedTable:
        found = None
    except psycopg.OperationalError as exc:
        raise TransientError(f"cannot read the read models: {exc}") from exc
    if found is None:
        print(f"tracebound: no run {run_id} in the read model", file=sys.stderr)
        return 1
    document = found.document()
    if args.json:
        print(json.dumps(document, ensure_ascii=False, sort_keys=True))
    else:
        sys.stdout.write(render_text(document))
        print(f"\npage  {run_page(run_id)}")
        trace_id = document["run"].get("trace_id")
        if trace_id:
            print(f"trace {TraceLinkSettings().url(trace_id) or clean(trace_id)}")
    return 0


def run_page(run_id: str) -> str:
    """The URL of a run's trace page on the configured ingest."""
    return PageAddress().page_url(page_path(run_id))


def _cmd_open(args: argparse.Namespace) -> int:
    url = PageAddress().page_url(page_path(args.name))
    print(url)  # also where to go when no browser can be started from here
    webbrowser.open(url)
    return 0


def register(subparsers: Any) -> None:
    """Add ``trace RUN_ID [--json]`` to the ``tracebound`` parser."""
    parser = subparsers.add_parser(
        "trace",
        help="show the trace of one run: claims, evidence, gatekeeper, verifier, answer",
        description="Read one run's trace from the PostgreSQL read models "
        "(the same data as GET /api/v1/runs/RUN_ID/trace). Exit 1 if the run is unknown.",
    )
    parser.add_argument("run_id", metavar="RUN_ID", help="the run id")
    parser.add_argument("--json", action="store_true", help="print the trace as JSON")
    parser.set_defaults(handler=_cmd_trace)
    opener = subparsers.add_parser(
        "open",
        help="open the page of a run or of a stored report in a browser (and print its URL)",
        description="Print the URL of RUN_ID's trace page, or of report REPORT_ID's page "
        "(written reports/REPORT_ID, as replay and eval print it; a run id never holds a "
        "slash), on the ingest (TRACEBOUND_INGEST_HOST/PORT) and open it in the default "
        "browser, if there is one.",
    )
    opener.add_argument(
        "name", metavar="RUN_ID|reports/REPORT_ID", help="a run id, or reports/ and a report id"
    )
    opener.set_defaults(handler=_cmd_open)
