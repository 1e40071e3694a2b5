"""Two writers of one run's row on the real database: the row holds both parts.

After a partition-count change a run's earlier events sit on one partition and its
later ones on another, which another projection worker, replica or rebuild group
may own. Each writer here folds one part of every run, as two owners would, and
the rows must equal those of one writer that saw every event.
"""

from __future__ import annotations

import random
import threading
from datetime import UTC, datetime

import psycopg

from projections.live import PendingRuns
from projections.migrate import migrate
from projections.models import MODELS, RunModel
from tests.support.projection import Projection, ProjectionFactory, Snapshot, differences
from tests.support.run_events import mixed_runs
from tracebound.codec.documents import EventDoc, document

TABLE = "diagnosis_run"
MODEL = MODELS[TABLE]


def _parts(seed: int) -> tuple[list[EventDoc], list[EventDoc]]:
    """Every run's events cut in two at a random point of its own history."""
    _specs, events = mixed_runs(40, datetime(2026, 3, 1, tzinfo=UTC), seed=seed)
    rng = random.Random(seed)
    by_run: dict[str, list[EventDoc]] = {}
    for event in events:
        by_run.setdefault(event.run_id, []).append(document(event))
    before: list[EventDoc] = []
    after: list[EventDoc] = []
    for run in by_run.values():
        cut = rng.randrange(1, len(run))
        before += run[:cut]
        after += run[cut:]
    return before, after


def _rows(p: Projection) -> Snapshot:
    whole = p.snapshot()
    return {TABLE: whole[TABLE]}


def _one_writer(p: Projection, events: list[EventDoc]) -> Snapshot:
    with psycopg.connect(p.dsn, autocommit=True) as conn:
        migrate(conn)
        writer = PendingRuns(_run_model(), max_runs=500)
        writer.fold(conn, TABLE, events)
        with conn.transaction():
            writer.write(conn, TABLE)
        writer.committed()
    return _rows(p)


def _run_model() -> RunModel:
    assert isinstance(MODEL, RunModel)
    return MODEL


def test_live_writers_of_one_run_keep_both_parts(projection: ProjectionFactory) -> None:
    before, after = _parts(seed=7)
    expected = _one_writer(projection(), before + after)
    shared = projection()
    a_conn, b_conn = (psycopg.connect(shared.dsn, autocommit=True) for _ in range(2))
    try:
        migrate(a_conn)
        a, b = PendingRuns(_run_model(), 500), PendingRuns(_run_model(), 500)
        half = len(before) // 2
        # Both fold before either commits: each starts from "no row" for runs the
        # other then writes first. Then each goes on from the versions it wrote.
        for writer, conn, events in ((a, a_conn, before[:half]), (b, b_conn, after[:half])):
            writer.fold(conn, TABLE, events)
        for writer, conn in ((b, b_conn), (a, a_conn)):
            with conn.transaction():
                writer.write(conn, TABLE)
            writer.committed()
        for writer, conn, events in ((a, a_conn, before[half:]), (b, b_conn, after[half:])):
            writer.fold(conn, TABLE, events)
            with conn.transaction():
                writer.write(conn, TABLE)
            writer.committed()
    finally:
        a_conn.close()
        b_conn.close()
    found = differences(_rows(shared), expected)
    assert not found, found


def test_rebuild_groups_writing_at_once_keep_both_parts(
    projection: ProjectionFactory,
) -> None:
    before, after = _parts(seed=11)
    expected = _one_writer(projection(), before + after)
    shared = projection()
    with psycopg.connect(shared.dsn, autocommit=True) as conn:
        migrate(conn)
    start = threading.Barrier(2)
    failures: list[BaseException] = []

    def group(events: list[EventDoc]) -> None:
        try:
            with psycopg.connect(shared.dsn, autocommit=True) as conn:
                writer = MODEL.rebuild_writer(conn, TABLE)
                start.wait(30)
                for i in range(0, len(events), 25):
                    with conn.transaction():
                        writer.apply(events[i : i + 25])
                        writer.flush()  # every batch written: the two meet on many rows
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=group, args=(part,)) for part in (before, after)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not failures, failures
    found = differences(_rows(shared), expected)
    assert not found, found
