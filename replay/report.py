"""A replay or eval report: one JSON document, a readable summary, and its table rows.

Why one shape for all kinds: the eval tables store every report the same way
(``baseline`` / ``candidate`` / ``summary`` / ``per_run``), so a later report can be
compared with an earlier one whatever produced them; eval reports add one row
per case (``cases``) for ``eval_case_result``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

MAX_RUNS_SHOWN = 50


@dataclass
class CaseResult:
    """One eval case: passed only if every expectation held; ``reasons`` says each."""

    case_id: str
    passed: bool
    reasons: list[dict[str, Any]]
    run: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {
            "case_id": self.case_id,
            "passed": self.passed,
            "reasons": self.reasons,
            "run": self.run,
        }


@dataclass
class Report:
    kind: str
    baseline: dict[str, Any]
    candidate: dict[str, Any]
    summary: dict[str, Any]
    per_run: list[dict[str, Any]] = field(default_factory=list)
    cases: list[CaseResult] = field(default_factory=list)
    created_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    report_id: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.report_id,
            "kind": self.kind,
            "created_at": self.created_at.isoformat(),
            "baseline": self.baseline,
            "candidate": self.candidate,
            "summary": self.summary,
            "per_run": self.per_run,
            "cases": [c.to_json() for c in self.cases],
        }

    def write_json(self, path: Path) -> None:
        text = json.dumps(self.to_json(), ensure_ascii=False, indent=2, default=str)
        path.write_text(text + "\n", encoding="utf-8")


def _line(key: str, value: Any) -> str:
    if isinstance(value, dict | list):
        value = json.dumps(value, ensure_ascii=False, default=str)
    return f"  {key}: {value}"


def render_text(report: Report) -> str:
    """The human summary: counts, transitions, rule fires, deltas, the runs that changed."""
    out = [f"{report.kind} report" + (f" #{report.report_id}" if report.report_id else "")]
    out.append(_line("baseline", report.baseline))
    out.append(_line("candidate", report.candidate))
    summary = dict(report.summary)
    transitions = {
        k: summary.pop(k) for k in ("severity_transitions", "verdict_transitions") if k in summary
    }
    fires = summary.pop("rule_fires", None)
    changed_runs = summary.pop("runs_changed", [])
    for key, value in summary.items():
        out.append(_line(key, value))
    for name, counts in transitions.items():
        out.append(f"{name.replace('_', ' ')}:")
        out += [f"    {k}: {v}" for k, v in counts.items()]
    if fires:
        out.append("rule fires (old → new):")
        for rule, counts in fires.items():
            mark = "  *" if counts["old"] != counts["new"] else ""
            out.append(f"    {rule}: {counts['old']} → {counts['new']}{mark}")
    if report.per_run and not report.cases:
        changed = [r for r in report.per_run if r.get("changed")]
        out.append(f"changed ({len(changed)} of {len(report.per_run)}; runs: {len(changed_runs)}):")
        for row in changed[:MAX_RUNS_SHOWN]:
            out.append("    " + _run_line(row))
        if len(changed) > MAX_RUNS_SHOWN:
            out.append(f"    … {len(changed) - MAX_RUNS_SHOWN} more (see --json)")
    if report.cases:
        out.append("cases:")
        width = max(len(c.case_id) for c in report.cases)
        for case in report.cases:
            failed = [r["detail"] for r in case.reasons if not r["passed"]]
            verdict = case.run.get("verdict", "?")
            status = "PASS" if case.passed else "FAIL"
            note = "; ".join(failed) if failed else "all expectations held"
            out.append(f"    {case.case_id:<{width}}  {status}  verdict={verdict}  {note}")
    return "\n".join(out)


def _run_line(row: dict[str, Any]) -> str:
    old, new = row.get("old", {}), row.get("new", {})
    head = f"{row.get('run_id')} r{row.get('round', '-')}: "
    if "severity" in old:
        rules = ""
        if row.get("failed_rules_added"):
            rules += " +" + ",".join(row["failed_rules_added"])
        if row.get("failed_rules_removed"):
            rules += " -" + ",".join(row["failed_rules_removed"])
        return (
            head + f"{old['status']}/{old['severity']} → {new['status']}/{new['severity']}{rules}"
        )
    if "outcome" in old:
        delta = row.get("groundedness_delta")
        shown = f" groundedness {delta:+.3f}" if delta else ""
        return head + f"{old['outcome']} → {new['outcome']}{shown}"
    extra = " (answer text changed)" if row.get("answer_changed") else ""
    misses = len(row.get("unrecorded_tool_calls") or [])
    extra += f" ({misses} unrecorded tool call(s))" if misses else ""
    extra += f" error: {row['error']}" if row.get("error") else ""
    return f"{row.get('run_id')}: {old.get('verdict')} → {new.get('verdict')}{extra}"
