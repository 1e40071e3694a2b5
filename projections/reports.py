"""Stored replay and eval reports (``eval_report``, ``eval_case_result``) as the pages read them.

Why bounded reads: a replay over a long window stores one ``per_run`` row per
stage input, and a page needs only the runs that changed, so PostgreSQL picks
those out (``jsonb_array_elements``) and at most :data:`MAX_CHANGED` are sent.
The list reads newest first by primary key, a page at a time, and drops the
long lists of ``summary`` that only the report itself shows. Every value in a
report came from events or model output, so the pages escape all of it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from projections.store import Connection

PAGE_SIZE = 50
MAX_CHANGED = 200  # changed runs a report page shows
MAX_CASES = 500  # eval cases a report page shows
LONG_SUMMARY = ["runs_changed", "failed_cases", "rule_fires"]  # not on the list page

_LIST = """
SELECT id, kind, created_at, baseline, candidate, summary - %(long)s::text[]
FROM eval_report
WHERE %(before)s::bigint IS NULL OR id < %(before)s::bigint
ORDER BY id DESC
LIMIT %(limit)s
"""
_ONE = """
SELECT id, kind, created_at, baseline, candidate, summary - 'runs_changed',
       jsonb_array_length(per_run)
FROM eval_report WHERE id = %s
"""
_CHANGED = """
SELECT e.row
FROM eval_report r, jsonb_array_elements(r.per_run) WITH ORDINALITY AS e(row, n)
WHERE r.id = %s AND r.kind <> 'eval' AND e.row ->> 'changed' = 'true'
ORDER BY e.n
LIMIT %s
"""
_CASES = """
SELECT case_id, passed, reasons, run FROM eval_case_result
WHERE report_id = %s ORDER BY passed, case_id LIMIT %s
"""


@dataclass(frozen=True, slots=True)
class ReportHead:
    """What the list shows of a report: its id, kind, time, what was compared, totals."""

    id: int
    kind: str
    created_at: datetime
    baseline: dict[str, Any]
    candidate: dict[str, Any]
    summary: dict[str, Any]

    @property
    def family(self) -> str:
        """``eval`` or ``replay`` (the kind without its stage)."""
        return self.kind.split(".", 1)[0]


@dataclass(frozen=True, slots=True)
class StoredReport:
    """One report as its page shows it: the head, the changed runs (capped) and the cases."""

    head: ReportHead
    inputs: int  # per-run rows stored
    changed: list[dict[str, Any]] = field(default_factory=list)
    cases: list[dict[str, Any]] = field(default_factory=list)


def _head(row: tuple[Any, ...]) -> ReportHead:
    return ReportHead(int(row[0]), str(row[1]), row[2], row[3] or {}, row[4] or {}, row[5] or {})


def list_reports(
    conn: Connection, before: int | None = None, limit: int = PAGE_SIZE
) -> tuple[list[ReportHead], int | None]:
    """The newest ``limit`` reports older than ``before``, and the ``before`` of the next page."""
    rows = conn.execute(
        _LIST, {"long": LONG_SUMMARY, "before": before, "limit": limit + 1}
    ).fetchall()
    heads = [_head(r) for r in rows[:limit]]
    return heads, (heads[-1].id if len(rows) > limit else None)


def read_report(conn: Connection, report_id: int) -> StoredReport | None:
    """One report with its changed runs and cases, or None when there is no such report."""
    row = conn.execute(_ONE, (report_id,)).fetchone()
    if row is None:
        return None
    changed = [r[0] for r in conn.execute(_CHANGED, (report_id, MAX_CHANGED)).fetchall()]
    cases = [
        {"case_id": c[0], "passed": c[1], "reasons": c[2] or [], "run": c[3] or {}}
        for c in conn.execute(_CASES, (report_id, MAX_CASES)).fetchall()
    ]
    return StoredReport(_head(row), int(row[6] or 0), changed, cases)
