"""How long the runs dashboard's first page takes in the database with 100,000 runs.

In a private PostgreSQL schema: 500 runs are projected from generated events by
the read models' own write path (the same runs the dashboard's browser test
uses), then copied in SQL, each copy a day further back, until
``diagnosis_run`` holds the wanted number of rows; ``ANALYZE`` follows, as
autovacuum would. The figure is the time of the page's reads (the run list's
first page, its rows' details, the summary), which is what the page's
``Server-Timing`` header reports; rendering the HTML is not included.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import psycopg

from bench.projections_bench import private_schema
from projections.dashboard import PAGE_SIZE, page_details, read_dashboard, read_summary
from projections.migrate import migrate
from projections.run_list import list_runs_filtered, parse_filter
from tests.support.run_events import mixed_runs, project

SEED_RUNS = 500
COPY = (
    "INSERT INTO diagnosis_run SELECT copy.* FROM diagnosis_run r, generate_series(1, %s) AS g,"
    " LATERAL jsonb_populate_record(NULL::diagnosis_run, to_jsonb(r)"
    " || jsonb_build_object('run_id', r.run_id || '-' || g,"
    " 'requested_at', r.requested_at - make_interval(days => g))) AS copy"
)
SELECTIONS = {
    "first page": {},
    "first page, verdict=REJECT mode=CHAT": {"verdict": "REJECT", "mode": "CHAT"},
}


def _timed(conn: psycopg.Connection[Any], params: dict[str, str], repeat: int) -> list[float]:
    selection = parse_filter({**params, "limit": str(PAGE_SIZE)})
    spent = []
    for _ in range(repeat):
        started = time.perf_counter()
        read_dashboard(conn, selection)
        spent.append((time.perf_counter() - started) * 1000)
    return spent


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
    medians = {}
    for name, read in reads.items():
        spent = []
        for _ in range(repeat):
            started = time.perf_counter()
            read()
            spent.append((time.perf_counter() - started) * 1000)
        medians[name] = round(statistics.median(spent), 1)
    return medians


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
    return {
        "runs": int(rows),
        "page_size": PAGE_SIZE,
        "median_ms": {name: round(statistics.median(t), 1) for name, t in timings.items()},
        "all_ms": {name: [round(v, 1) for v in t] for name, t in timings.items()},
        "first_page_parts_median_ms": parts,
    }
