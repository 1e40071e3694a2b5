"""What the runs dashboard shows beyond the run list: per-run details and a summary.

:func:`read_dashboard` is all a page reads. It lists runs with
:func:`projections.run_list.list_runs_filtered` (the API's own query) and adds
two reads, both with the same filter:

- :func:`page_details` — for the runs of one page only: the alert the run is
  about, the models that answered, the gatekeeper's rule set and the verifier's
  mode (``rules-fallback`` when the model failed and the rules answered);
- :func:`read_summary` — counts per verdict over the whole selection, and the
  pictures' numbers over its latest :data:`SAMPLE` runs (read in the order of the
  paging index, so the cost is bounded however many runs the table holds), with
  the dead letters written since the oldest of them (an index range, capped).

The arithmetic is pure (:func:`summarize`) so it can be checked without a database.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from psycopg import sql
from psycopg.rows import dict_row

from projections.run_list import SORT_AT, RunFilter, filter_clause, list_runs_filtered
from projections.trace import STAGES, Connection
from projections.views import RunList

PAGE_SIZE = 50
SAMPLE = 1000  # runs the pictures describe: enough for p99, cheap at any table size
FALLBACK = "rules-fallback"
BUCKETS = 24
BUCKET_STEPS = tuple(
    timedelta(seconds=s)
    for s in (60, 300, 900, 1800, 3600, 3 * 3600, 6 * 3600, 12 * 3600, 86400, 7 * 86400)
)
PERCENTILES = (50, 95, 99)
LATENCY_BINS = 20
MAX_DEAD_LETTERS = 100_000  # counted for the rate; more reads as this many


@dataclass(frozen=True, slots=True)
class RunDetails:
    """What a dashboard row shows besides the run list's columns."""

    alertname: str | None
    alert_service: str | None
    alert_count: int
    models: str | None
    rule_set_version: str | None
    verifier_mode: str | None


@dataclass(frozen=True, slots=True)
class Bucket:
    start: datetime
    verdicts: dict[str, int]


@dataclass(frozen=True, slots=True)
class Summary:
    """Counts over the selection and the pictures' numbers over its latest runs."""

    total: int
    verdicts: dict[str, int]  # verdict (or "none") → runs of the whole selection
    sampled: int  # runs the numbers below describe
    buckets: list[Bucket] = field(default_factory=list)
    bucket_width: timedelta = BUCKET_STEPS[0]
    latencies: list[int] = field(default_factory=list)  # answered runs, ascending
    percentiles: dict[int, int] = field(default_factory=dict)
    answered: int = 0
    fallbacks: int = 0  # runs where some role answered from rules after its model failed
    judged: int = 0  # runs judged at all (a verifier mode recorded)
    unfinished: int = 0  # runs not answered (yet)
    stages: list[tuple[str, float, int]] = field(default_factory=list)  # label, mean ms, runs
    dead_letters: int = 0  # of the whole pipeline, since the oldest sampled run was requested


@dataclass(frozen=True, slots=True)
class DashboardRead:
    """Everything one dashboard page shows, read on one connection."""

    page: RunList
    details: dict[str, RunDetails]
    summary: Summary


def read_dashboard(conn: Connection, selection: RunFilter) -> DashboardRead:
    """The page of runs (the run list's own query), their details and the summary."""
    page = list_runs_filtered(conn, selection)
    details = page_details(conn, [r.run_id for r in page.runs])
    return DashboardRead(page, details, read_summary(conn, selection))


_DETAILS = sql.SQL(
    "SELECT r.run_id,"
    " r.request -> 'alerts' -> 0 -> 'labels' ->> 'alertname' AS alertname,"
    " r.request -> 'alerts' -> 0 -> 'labels' ->> 'service' AS alert_service,"
    " CASE jsonb_typeof(r.request -> 'alerts') WHEN 'array'"
    "  THEN jsonb_array_length(r.request -> 'alerts') ELSE 0 END AS alert_count,"
    " (SELECT string_agg(DISTINCT s.model, ', ' ORDER BY s.model) FROM agent_step s"
    "  WHERE s.run_id = r.run_id AND s.model IS NOT NULL) AS models,"
    " r.self_evaluation -> 'verifier_evaluation' -> 'gatekeeper_result' ->> 'rule_set_version'"
    "  AS rule_set_version,"
    " r.self_evaluation -> 'verifier_evaluation' ->> 'verifier_mode' AS verifier_mode"
    " FROM diagnosis_run r WHERE r.run_id = ANY(%s)"
)


def page_details(conn: Connection, run_ids: list[str]) -> dict[str, RunDetails]:
    """The details of the runs of one page (one read, by primary key)."""
    if not run_ids:
        return {}
    with conn.cursor(row_factory=dict_row) as cur:
        cur.execute(_DETAILS, (run_ids,))
        rows = cur.fetchall()
    return {
        str(r["run_id"]): RunDetails(
            alertname=r["alertname"],
            alert_service=r["alert_service"],
            alert_count=int(r["alert_count"] or 0),
            models=r["models"],
            rule_set_version=r["rule_set_version"],
            verifier_mode=r["verifier_mode"],
        )
        for r in rows
    }


def read_summary(conn: Connection, selection: RunFilter, sample: int = SAMPLE) -> Summary:
    """Counts per verdict of the selection and the pictures' numbers of its latest runs."""
    where, params = filter_clause(selection)
    counts = sql.SQL(
        "SELECT coalesce(verdict, 'none') AS verdict, count(*) AS n FROM diagnosis_run {where}"
        " GROUP BY 1"
    ).format(where=where)
    latest = sql.SQL(
        "SELECT requested_at, verdict, status, latency_ms, timings,"
        " self_evaluation -> 'verifier_evaluation' ->> 'verifier_mode' AS verifier_mode,"
        " CASE jsonb_typeof(self_evaluation -> 'verifier_evaluation' -> 'fallbacks')"
        "  WHEN 'array' THEN jsonb_array_length("
        "   self_evaluation -> 'verifier_evaluation' -> 'fallbacks') ELSE 0 END AS fallback_roles"
        " FROM diagnosis_run {where} ORDER BY {sort_at} DESC, run_id DESC LIMIT %s"
    ).format(where=where, sort_at=sql.SQL(SORT_AT))
    with conn.cursor(row_factory=dict_row) as cur:
        cur.execute(counts, params)
        verdicts = {str(r["verdict"]): int(r["n"]) for r in cur.fetchall()}
        cur.execute(latest, [*params, sample])
        rows = cur.fetchall()
    summary = summarize(verdicts, rows)
    times = [r["requested_at"] for r in rows if isinstance(r["requested_at"], datetime)]
    if not times:
        return summary
    return replace(summary, dead_letters=count_dead_letters(conn, min(times)))


_DEAD_LETTERS = (
    "SELECT count(*) FROM (SELECT 1 FROM dead_letter WHERE occurred_at >= %s LIMIT %s) AS d"
)


def count_dead_letters(conn: Connection, since: datetime, cap: int = MAX_DEAD_LETTERS) -> int:
    """Dead letters written since ``since`` (at most ``cap``: an index range, never a scan).

    They are counted for the whole pipeline, not the filtered runs: a refused input
    often has no run a filter could match.
    """
    row = conn.execute(_DEAD_LETTERS, (since, cap)).fetchone()
    return int(row[0]) if row else 0


def _width(span: timedelta) -> timedelta:
    """The smallest step that draws ``span`` in at most :data:`BUCKETS` bars."""
    for step in BUCKET_STEPS:
        if span <= step * BUCKETS:
            return step
    return BUCKET_STEPS[-1]


def _buckets(rows: list[dict[str, Any]]) -> tuple[list[Bucket], timedelta]:
    times = [r["requested_at"] for r in rows if isinstance(r["requested_at"], datetime)]
    if not times:
        return [], BUCKET_STEPS[0]
    first, last = min(times), max(times)
    width = _width(last - first)
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    origin = epoch + width * ((first - epoch) // width)
    count = (last - origin) // width + 1
    bars = [Bucket(origin + width * i, {}) for i in range(count)]
    for row in rows:
        at = row["requested_at"]
        if isinstance(at, datetime):
            held = bars[(at - origin) // width].verdicts
            key = row["verdict"] or "none"
            held[key] = held.get(key, 0) + 1
    return bars, width


def percentile(ordered: list[int], pct: int) -> int:
    """The nearest-rank percentile of an ascending, non-empty list."""
    rank = max(1, -(-pct * len(ordered) // 100))
    return ordered[rank - 1]


def _millis(iso: Any) -> int | None:
    if not isinstance(iso, str):
        return None
    try:
        return int(datetime.fromisoformat(iso).timestamp() * 1000)
    except ValueError:
        return None


def _stage_means(rows: list[dict[str, Any]]) -> list[tuple[str, float, int]]:
    """Per stage, the mean time from the end of the stage before it to its own end."""
    totals: Counter[str] = Counter()
    runs: Counter[str] = Counter()
    for row in rows:
        timings = row["timings"] if isinstance(row["timings"], dict) else {}
        previous: int | None = None
        for key, _label in STAGES:
            span = timings.get(key)
            end = _millis(span.get("last")) if isinstance(span, dict) else None
            if end is None:
                continue
            if previous is not None:
                totals[key] += max(0, end - previous)
                runs[key] += 1
            previous = end
    return [(label, totals[key] / runs[key], runs[key]) for key, label in STAGES if runs[key]]


def summarize(verdicts: dict[str, int], rows: list[dict[str, Any]]) -> Summary:
    """The summary of a selection from its verdict counts and its latest rows."""
    buckets, width = _buckets(rows)
    latencies = sorted(int(r["latency_ms"]) for r in rows if r["latency_ms"] is not None)
    modes = [r["verifier_mode"] for r in rows if r["verifier_mode"]]
    return Summary(
        total=sum(verdicts.values()),
        verdicts=verdicts,
        sampled=len(rows),
        buckets=buckets,
        bucket_width=width,
        latencies=latencies,
        percentiles={p: percentile(latencies, p) for p in PERCENTILES} if latencies else {},
        answered=sum(1 for r in rows if r["status"] == "answered"),
        # any role's fallback (the answer's list), or a verifier fallback recorded before
        # answers carried that list
        fallbacks=sum(1 for r in rows if r.get("fallback_roles") or r["verifier_mode"] == FALLBACK),
        judged=len(modes),
        unfinished=sum(1 for r in rows if r["status"] != "answered"),
        stages=_stage_means(rows),
    )
