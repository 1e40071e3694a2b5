"""How long the runs dashboard's first page takes in the database with 100,000 runs.

In a private PostgreSQL schema: 500 runs are projected from generated events by
the read models' own write path (the same runs the dashboard's browser test
uses), then copied in SQL, each copy a day further back, until
``diagnosis_run`` holds the wanted number of rows; ``ANALYZE`` follows, as
autovacuum would. The figure is the time of the page's reads (the run list's
first page, its rows' details, the summary), which is what the page's
``Server-Timing`` header reports; rendering the HTML is not included. The report
pages' reads are timed the same way over :data:`REPORTS` stored replay reports of
:data:`REPORT_RUNS` per-run rows each (a tenth of them changed).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from bench.projections_bench import private_schema
from projections.dashboard import PAGE_SIZE, page_details, read_dashboard, read_summary
from projections.migrate import migrate
from projections.reports import list_reports, read_report
from projections.run_list import list_runs_filtered, parse_filter
from tests.support.run_events import mixed_runs, project

SEED_RUNS = 500
COPY = (
    "INSERT INTO diagnosis_run SELECT copy.* FROM diagnosis_run r, generate_series(1, %s) AS g,"
    " LATERAL jsonb_populate_record(NULL::diagnosis_run, to_jsonb(r)"
    " || jsonb_build_object('run_id', r.run_id || '-' || g,"
    " 'requested_at', r.requested_at - make_interval(days => g))) AS copy"
)
REPORTS = 1000
REPORT_RUNS = 2000
COPY_REPORTS = (
    "INSERT INTO eval_report (kind, created_at, baseline, candidate, summary, per_run)"
    " SELECT kind, created_at - make_interval(mins => g), baseline, candidate, summary, per_run"
    " FROM eval_report, generate_series(1, %s) AS g"
)
SELECTIONS = {
    "first page": {},
    "first page, verdict=REJECT mode=CHAT": {"verdict": "REJECT", "mode": "CHAT"},
}


def _spent_ms(read: Callable[[], object], repeat: int) -> list[float]:
    spent = []
    for _ in range(repeat):
        started = time.perf_counter()
        read()
        spent.append((time.perf_counter() - started) * 1000)
    return spent


def _median_ms(read: Callable[[], object], repeat: int) -> float:
    return round(statistics.median(_spent_ms(read, repeat)), 1)


def _timed(conn: psycopg.Connection[Any], params: dict[str, str], repeat: int) -> list[float]:
    selection = parse_filter({**params, "limit": str(PAGE_SIZE)})
    return _spent_ms(lambda: read_dashboard(conn, selection), repeat)


def _parts(conn: psycopg.Connection[Any], repeat: int) -> dict[str, float]:
    """The median time of each read of the unfiltered first page, to see which one costs."""
    selection = parse_filter({"limit": str(PAGE_SIZE)})
    page = list_runs_filtered(conn, selection)
    ids = [r.run_id for r in page.runs]
    reads: dict[str, Callable[[], object]] = {
        "run list": lambda: list_runs_filtered(conn, selection),
        "details": lambda: page_details(conn, ids),
        "summary": lambda: read_summary(conn, selection),
    }
    return {name: _median_ms(read, repeat) for name, read in reads.items()}


def _reports(conn: psycopg.Connection[Any], repeat: int) -> dict[str, float]:
    """The median read time of the report list's first page and of the newest report's page."""
    per_run = [
        {
            "run_id": f"run-{i:05d}",
            "query": f"payment-service health check #{i}",
            "old": {"verdict": "PASS", "answer": "recorded answer " * 20},
            "new": {"verdict": "LOW_CONFID" if i % 10 == 0 else "PASS", "answer": "new " * 60},
            "changed": i % 10 == 0,
        }
        for i in range(REPORT_RUNS)
    ]
    summary = {"runs": REPORT_RUNS, "changed": REPORT_RUNS // 10, "verdict_transitions": {}}
    conn.execute(
        "INSERT INTO eval_report (kind, summary, per_run) VALUES ('replay.pipeline', %s, %s)",
        (Jsonb(summary), Jsonb(per_run)),
    )
    conn.execute(COPY_REPORTS, (REPORTS - 1,))
    conn.execute("ANALYZE eval_report")
    newest = list_reports(conn)[0][0].id
    return {
        "list": _median_ms(lambda: list_reports(conn), repeat),
        "report": _median_ms(lambda: read_report(conn, newest), repeat),
    }


def run(dsn: str, runs: int = 100_000, repeat: int = 7) -> dict[str, Any]:
    """The median page read time (ms) per selection over ``runs`` runs."""
    with (
        private_schema(dsn) as settings,
        psycopg.connect(settings.dsn.get_secret_value(), autocommit=True) as conn,
    ):
        migrate(conn)
        _specs, events = mixed_runs(SEED_RUNS, datetime.now(UTC).replace(microsecond=0))
        project(conn, events)
        copies = -(-runs // SEED_RUNS) - 1
        conn.execute(COPY, (copies,))
        conn.execute("ANALYZE diagnosis_run")
        [(rows,)] = conn.execute("SELECT count(*) FROM diagnosis_run").fetchall()
        _timed(conn, {}, 1)  # warm the cache once, as a page served before would
        timings = {name: _timed(conn, p, repeat) for name, p in SELECTIONS.items()}
        parts = _parts(conn, repeat)
        reports = _reports(conn, repeat)
    return {
        "runs": int(rows),
        "page_size": PAGE_SIZE,
        "median_ms": {name: round(statistics.median(t), 1) for name, t in timings.items()},
        "all_ms": {name: [round(v, 1) for v in t] for name, t in timings.items()},
        "first_page_parts_median_ms": parts,
        "reports": REPORTS,
        "report_pages_median_ms": reports,
    }
