"""How fast the read models are written: live catch-up and ``projections rebuild``.

Both work in a private PostgreSQL schema (``search_path`` through the DSN) with
consumer groups of their own, so the stack's read models are never touched, and
both read every recorded event of the model topics (the whole history on the
stack, the pipeline run's events included):

- catch-up: the projection process's workers (one thread and consumer per read
  model, as ``python -m projections`` runs them), started in this process on an
  empty schema and timed until every checkpoint reaches the end offsets taken at
  the start;
- rebuild: :func:`projections.rebuild.rebuild_model` for every model, one after
  the other, as ``tracebound projections rebuild`` does.

An *event* here is one event applied to one read model: ``diagnosis_run`` reads
every stage topic, ``tool_invocation`` and ``agent_step`` one topic each, so the
same ``ToolInvoked`` counts for two models. Distinct events are reported too.
"""

from __future__ import annotations

import contextlib
import cProfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from bench.report import dump_profiles
from bench.topic_reads import read_range
from projections.migrate import migrate
from projections.models import ALL_TOPICS, MODELS
from projections.rebuild import end_offsets, rebuild_model
from projections.runner import ModelWorker, model_workers
from projections.settings import SERVICE, ProjectionRuntimeSettings, ProjectionSettings
from projections.store import connect, read_checkpoints
from tracebound.runtime.metrics import ServiceMetrics
from tracebound.settings import KafkaSettings, PostgresSettings

CATCH_UP_TIMEOUT_S = 300.0


def schema_dsn(dsn: str, schema: str) -> str:
    sep = "&" if "?" in dsn else "?"
    return f"{dsn}{sep}options=-csearch_path%3D{schema}"


@contextlib.contextmanager
def private_schema(dsn: str) -> Iterator[PostgresSettings]:
    """A fresh schema for one measurement, dropped afterwards."""
    schema = f"bench_proj_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    try:
        yield PostgresSettings.model_validate({"dsn": schema_dsn(dsn, schema)})
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


def model_events(kafka: KafkaSettings) -> tuple[dict[str, int], int, dict[tuple[str, int], int]]:
    """Events per read model and distinct events now on the model topics, and the end offsets."""
    ends = end_offsets(kafka, ALL_TOPICS)
    _, counts = read_range(kafka, {}, ends, decode=False)
    per_model = {m.name: sum(counts[t] for t in m.topics) for m in MODELS.values()}
    return per_model, sum(counts.values()), ends


def catch_up(kafka: KafkaSettings, dsn: str, profile_to: Path | None = None) -> dict[str, Any]:
    """The projection workers over the whole history into an empty schema; events/s."""
    per_model, distinct, ends = model_events(kafka)
    with private_schema(dsn) as postgres:
        with connect(postgres) as conn:
            migrate(conn)
        stop = threading.Event()
        settings = ProjectionSettings(group_prefix=f"bench-{uuid.uuid4().hex[:8]}.")
        runtime = ProjectionRuntimeSettings.for_service(SERVICE)
        metrics = ServiceMetrics(SERVICE)
        workers = model_workers(
            kafka=kafka,
            postgres=postgres,
            runtime=runtime,
            settings=settings,
            metrics=metrics,
            stop=stop,
        )
        profilers: list[cProfile.Profile] = []

        def work(worker: ModelWorker) -> None:
            if profile_to is None:
                worker.run()
                return
            profiler = cProfile.Profile()
            profilers.append(profiler)
            profiler.runcall(worker.run)

        threads = [
            threading.Thread(target=work, args=(w,), name=f"bench-{w.model.name}", daemon=True)
            for w in workers
        ]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        caught: dict[str, float] = {}
        try:
            with connect(postgres) as conn:
                while len(caught) < len(MODELS):
                    if time.perf_counter() - started > CATCH_UP_TIMEOUT_S:
                        raise RuntimeError(f"projection catch-up: only {sorted(caught)} caught up")
                    for model in MODELS.values():
                        if model.name in caught:
                            continue
                        stored = read_checkpoints(conn, model.name)
                        wanted = {tp: end for tp, end in ends.items() if tp[0] in model.topics}
                        if all(stored.get(tp, 0) >= end for tp, end in wanted.items()):
                            caught[model.name] = time.perf_counter() - started
                    time.sleep(0.05)
        finally:
            stop.set()
            for thread in threads:
                thread.join(60)
        if profile_to is not None and profilers:
            dump_profiles(profilers, profile_to)
    seconds = max(caught.values())
    total = sum(per_model.values())
    return {
        "events": total,
        "distinct_events": distinct,
        "seconds": round(seconds, 3),
        "events_per_second": round(total / seconds, 1),
        "distinct_events_per_second": round(distinct / seconds, 1),
        "per_model": {
            name: {
                "events": per_model[name],
                "seconds": round(caught[name], 3),
                "events_per_second": round(per_model[name] / caught[name], 1),
            }
            for name in per_model
        },
    }


def rebuild(kafka: KafkaSettings, dsn: str, profile_to: Path | None = None) -> dict[str, Any]:
    """``projections rebuild`` of every model into a private schema; events/s."""
    profiler = cProfile.Profile() if profile_to is not None else None
    with private_schema(dsn) as postgres, connect(postgres) as conn:
        migrate(conn)
        started = time.perf_counter()
        reports = []
        for model in MODELS.values():
            if profiler is not None:
                reports.append(profiler.runcall(rebuild_model, conn, kafka, model, None))
            else:
                reports.append(rebuild_model(conn, kafka, model, None))
        seconds = time.perf_counter() - started
    if profiler is not None and profile_to is not None:
        dump_profiles([profiler], profile_to)
    total = sum(r.events for r in reports)
    return {
        "events": total,
        "seconds": round(seconds, 3),
        "events_per_second": round(total / seconds, 1),
        "per_model": {
            r.model: {
                "events": r.events,
                "rows": r.rows,
                "seconds": round(r.seconds, 3),
                "events_per_second": round(r.events / r.seconds, 1) if r.seconds else 0.0,
            }
            for r in reports
        },
    }
