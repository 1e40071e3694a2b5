"""How fast the read models are written: live catch-up and ``projections rebuild``.

Both work in a private PostgreSQL schema (``search_path`` through the DSN) with
consumer groups of their own, so the stack's read models are never touched, and
both read every recorded event of the model topics (the whole history on the
stack, the pipeline run's events included):

- catch-up: ``python -m projections`` (one thread and consumer per read model, three
  for ``diagnosis_run``) on an empty schema, timed until every checkpoint reaches
  the end offsets taken at the start; once as one process, and once as replicas
  sharing the consumer groups, one per run partition with one run worker each (as
  ``up --replicas projections=3`` runs them with ``TRACEBOUND_PROJECTIONS_RUN_WORKERS=1``):
  a Python process decodes and folds on one core at a time, replicas on all of them;
- rebuild: :func:`projections.rebuild.rebuild_models` over every model in one pass,
  as ``tracebound projections rebuild`` does.

An *event* here is one event applied to one read model: ``diagnosis_run`` reads
every stage topic, ``tool_invocation`` and ``agent_step`` one topic each, so the
same ``ToolInvoked`` counts for two models. Distinct events are reported too.
"""

from __future__ import annotations

import contextlib
import cProfile
import math
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from bench import history_fill
from bench.history_fill import Offsets
from bench.processes import Sampler, rss_mb
from bench.report import dump_profiles
from projections.history import take_slice
from projections.migrate import migrate
from projections.models import ALL_TOPICS, MODELS
from projections.rebuild import rebuild_models, worker_count
from projections.settings import ProjectionSettings
from projections.store import connect, read_checkpoints
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


def _projection_processes(
    kafka: KafkaSettings, postgres: PostgresSettings, replicas: int, run_workers: int, log_to: Any
) -> list[Any]:
    """``replicas`` processes of ``python -m projections`` sharing one set of groups, as
    ``up --replicas projections=N`` runs them."""
    env = {
        **os.environ,
        "TRACEBOUND_KAFKA_BOOTSTRAP_SERVERS": kafka.bootstrap_servers,
        "TRACEBOUND_PG_DSN": postgres.dsn.get_secret_value(),
        "TRACEBOUND_PROJECTIONS_GROUP_PREFIX": f"bench-{uuid.uuid4().hex[:8]}.",
        "TRACEBOUND_PROJECTIONS_METRICS_PORT": "0",
        "TRACEBOUND_PROJECTIONS_RUN_WORKERS": str(run_workers),
    }
    argv = [sys.executable, "-m", "projections"]
    return [
        subprocess.Popen(argv, env=env, stdout=log_to, stderr=subprocess.STDOUT)
        for _ in range(replicas)
    ]


def run_partitions(ends: Offsets) -> int:
    """Partitions of the most partitioned topic ``diagnosis_run`` reads (its workers split
    them: partition *i* of every topic goes to one worker)."""
    topics = MODELS["diagnosis_run"].topics
    return max((p + 1 for t, p in ends if t in topics), default=1)


def scaled_replicas(kafka: KafkaSettings) -> int:
    """As many replicas as a rebuild runs workers: one per run partition, up to two per
    core (:func:`projections.rebuild.worker_count`)."""
    return worker_count(0, take_slice(kafka, MODELS["diagnosis_run"].topics))


def catch_up(
    kafka: KafkaSettings, dsn: str, profile_to: Path | None = None, replicas: int = 1
) -> dict[str, Any]:
    """``python -m projections`` over the whole history into an empty schema; events/s and
    the peak RSS of each process (sampled with py-spy when ``profile_to`` is given).

    One process runs the default run workers; ``replicas`` > 1 processes share the
    groups with just enough run workers each to hold every run partition."""
    history = history_fill.count(kafka)
    per_model, distinct, ends = history.per_model, history.distinct, history.ends
    workers = ProjectionSettings().run_workers
    if replicas > 1:
        workers = math.ceil(run_partitions(ends) / replicas)
    with private_schema(dsn) as postgres, tempfile.TemporaryFile() as output:
        with connect(postgres) as conn:
            migrate(conn)
        started = time.perf_counter()
        procs = _projection_processes(kafka, postgres, replicas, workers, output)
        sampler = Sampler(profile_to.parent / "projections-catch-up") if profile_to else None
        if sampler is not None:
            sampler.start({f"projections-{i + 1}": p.pid for i, p in enumerate(procs)})
        caught: dict[str, float] = {}
        peaks = [math.nan] * replicas
        try:
            with connect(postgres) as conn:
                while len(caught) < len(MODELS):
                    if time.perf_counter() - started > CATCH_UP_TIMEOUT_S or any(
                        p.poll() is not None for p in procs
                    ):
                        output.seek(0)
                        tail = output.read()[-2000:].decode("utf-8", "replace")
                        raise RuntimeError(
                            f"projection catch-up: only {sorted(caught)} caught up\n{tail}"
                        )
                    for model in MODELS.values():
                        if model.name in caught:
                            continue
                        stored = read_checkpoints(conn, model.name)
                        wanted = {tp: end for tp, end in ends.items() if tp[0] in model.topics}
                        if all(stored.get(tp, 0) >= end for tp, end in wanted.items()):
                            caught[model.name] = time.perf_counter() - started
                    peaks = [rss_mb(p.pid, "VmHWM") for p in procs]
                    time.sleep(0.05)
        finally:
            if sampler is not None:
                sampler.stop()
            for proc in procs:
                proc.terminate()
            for proc in procs:
                proc.wait(60)
    seconds = max(caught.values())
    total = sum(per_model.values())
    return {
        "replicas": replicas,
        "run_workers": workers,
        "events": total,
        "distinct_events": distinct,
        "seconds": round(seconds, 3),
        "events_per_second": round(total / seconds, 1),
        "distinct_events_per_second": round(distinct / seconds, 1),
        "peak_rss_mb": round(max(peaks), 1),
        "peak_rss_mb_together": round(sum(peaks), 1),
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
    """``projections rebuild`` of every model into a private schema; events/s.

    As the command runs it: the topics read once for all models, by one worker
    process per core (the profile, when asked for, is of a single in-process worker).
    """
    profiler = cProfile.Profile() if profile_to is not None else None
    models = list(MODELS.values())
    with private_schema(dsn) as postgres, connect(postgres) as conn:
        migrate(conn)
        started = time.perf_counter()
        if profiler is not None:
            reports = profiler.runcall(
                rebuild_models, conn, kafka, models, postgres=postgres, workers=1, progress=None
            )
        else:
            reports = rebuild_models(conn, kafka, models, postgres=postgres, progress=None)
        seconds = time.perf_counter() - started
    if profiler is not None and profile_to is not None:
        dump_profiles([profiler], profile_to)
    total = sum(r.events for r in reports)
    return {
        "events": total,
        "seconds": round(seconds, 3),
        "events_per_second": round(total / seconds, 1),
        "workers": 1 if profiler is not None else worker_count(0, take_slice(kafka, ALL_TOPICS)),
        "per_model": {r.model: {"events": r.events, "rows": r.rows} for r in reports},
    }
