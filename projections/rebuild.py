"""Rebuilding read models from their topics, and the projections' status.

A rebuild reads each topic of the models from the beginning up to the end offsets
taken when it starts (event topics keep their whole history) into new tables
``<name>__rebuild`` shaped like the live ones. Then, per model, one transaction
under the model's advisory lock renames the live table away, renames the new one
in, replaces the model's checkpoints with those end offsets and drops the old
table. Readers see either the old model or the new one, never an empty one. A
running projection process notices that its checkpoints moved (its next batch is
refused by the compare-and-set) and resumes from the rebuild's end offsets.

The topics are read once for all the models rebuilt together, and split into
partition groups rebuilt in parallel by worker processes
(:mod:`projections.rebuild_group`); the swap waits for every group.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any, TextIO

from confluent_kafka import KafkaException
from psycopg import sql

from projections.history import Progress, Slice, take_slice
from projections.migrate import migrate
from projections.models import MODELS, ReadModel
from projections.rebuild_group import GroupJob, GroupTotals, group_process, rebuild_group
from projections.store import (
    Checkpoints,
    Connection,
    lock_model,
    read_checkpoints,
    write_checkpoints,
)
from tracebound import kafka as edge
from tracebound.errors import TransientError
from tracebound.settings import KafkaSettings, PostgresSettings

MAX_WORKERS = 16
WORKERS_PER_CORE = 2


@dataclass(frozen=True, slots=True)
class RebuildReport:
    model: str
    events: int
    skipped: int
    rows: int
    seconds: float
    end_offsets: dict[str, int]


def end_offsets(kafka: KafkaSettings, topic_names: tuple[str, ...]) -> Checkpoints:
    """High watermarks of every partition of ``topic_names`` (missing topics: none)."""
    consumer = edge.consumer(kafka, "projections-tool")
    try:
        return edge.end_offsets(consumer, topic_names)
    except KafkaException as exc:
        raise TransientError(f"cannot read end offsets: {exc}") from exc
    finally:
        consumer.close()


def worker_count(asked: int, part: Slice) -> int:
    """``asked`` workers, at most one per partition number.

    The default (``asked`` 0) is one per partition number, up to
    :data:`WORKERS_PER_CORE` per core: a worker waits for PostgreSQL about half its
    time, so one per core leaves the cores idle, and groups of unequal size (three
    partition numbers over two workers) leave one worker with twice the work.
    """
    numbers = {partition for _topic, partition in part.reading()}
    wanted = asked if asked > 0 else WORKERS_PER_CORE * (os.cpu_count() or 1)
    return max(1, min(wanted, len(numbers), MAX_WORKERS))


def _swap(conn: Connection, model: str, ends: Checkpoints) -> None:
    live, new, old = sql.Identifier(model), sql.Identifier(f"{model}__rebuild"), f"{model}__old"
    with conn.transaction():
        lock_model(conn, model)
        conn.execute(sql.SQL("ALTER TABLE {} RENAME TO {}").format(live, sql.Identifier(old)))
        conn.execute(sql.SQL("ALTER TABLE {} RENAME TO {}").format(new, live))
        conn.execute(sql.SQL("DROP TABLE {}").format(sql.Identifier(old)))
        indexes = conn.execute(
            "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()"
            " AND tablename = %s AND indexname LIKE %s",
            (model, f"{model}\\_\\_rebuild%"),
        ).fetchall()
        for (name,) in indexes:
            canonical = model + str(name)[len(f"{model}__rebuild") :]
            conn.execute(
                sql.SQL("ALTER INDEX {} RENAME TO {}").format(
                    sql.Identifier(str(name)), sql.Identifier(canonical)
                )
            )
        conn.execute("DELETE FROM projection_checkpoint WHERE projection = %s", (model,))
        write_checkpoints(conn, model, ends)


def _prepare(conn: Connection, model: ReadModel) -> None:
    target = f"{model.name}__rebuild"
    with conn.transaction():
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(target)))
        conn.execute(
            sql.SQL("CREATE TABLE {} (LIKE {} INCLUDING ALL)").format(
                sql.Identifier(target), sql.Identifier(model.name)
            )
        )


def _read_groups(
    conn: Connection,
    job: GroupJob,
    workers: int,
    progress: TextIO | None,
) -> GroupTotals:
    """Every group of ``part`` into the new tables: inline with one worker, else in processes."""
    if workers == 1:
        meter = Progress("rebuild", job.part.total, progress)
        return rebuild_group(conn, job.kafka, job.names, job.part, meter)
    totals = GroupTotals()
    context = multiprocessing.get_context("spawn")  # no client state crosses a fork
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        futures = [
            pool.submit(
                group_process,
                dataclasses.replace(
                    job, part=job.part.group(i, workers), label=f"rebuild group {i + 1}/{workers}"
                ),
            )
            for i in range(workers)
        ]
        for future in futures:
            done = future.result()
            totals.events.update(done.events)
            totals.skipped.update(done.skipped)
            totals.rows.update(done.rows)
    return totals


def rebuild_models(
    conn: Connection,
    kafka: KafkaSettings,
    models: list[ReadModel],
    *,
    postgres: PostgresSettings | None = None,
    workers: int = 0,
    progress: TextIO | None = sys.stderr,
) -> list[RebuildReport]:
    """Rebuild ``models`` into new tables and swap them in; see the module docstring.

    ``postgres`` is where worker processes connect (the settings' database when
    None); ``workers`` the partition groups read in parallel (0: see :func:`worker_count`).
    """
    migrate(conn)
    for model in models:
        _prepare(conn, model)
    topics = tuple(dict.fromkeys(t for m in models for t in m.topics))
    part = take_slice(kafka, topics)
    count = worker_count(workers, part)
    started = time.monotonic()
    names = [m.name for m in models]
    job = GroupJob(kafka, postgres or PostgresSettings(), names, part, "rebuild", progress is None)
    totals = _read_groups(conn, job, count, progress)
    reports = []
    for model in models:
        ends = model.own(part.ends)
        _swap(conn, model.name, ends)
        reports.append(
            RebuildReport(
                model=model.name,
                events=totals.events[model.name],
                skipped=totals.skipped[model.name],
                rows=totals.rows[model.name],
                seconds=time.monotonic() - started,
                end_offsets={f"{t}[{p}]": o for (t, p), o in sorted(ends.items())},
            )
        )
    if progress is not None:
        seconds = time.monotonic() - started
        rate = part.total / max(seconds, 1e-6)
        print(
            f"rebuilt {', '.join(names)}: {part.total:,} events read with {count} worker(s), "
            f"{seconds:.1f}s ({rate:,.0f} events/s)",
            file=progress,
            flush=True,
        )
    return reports


def status(conn: Connection, kafka: KafkaSettings) -> list[dict[str, Any]]:
    """Per model: row count, and per partition the checkpoint, end offset and lag."""
    migrate(conn)
    report: list[dict[str, Any]] = []
    for model in MODELS.values():
        count = conn.execute(
            sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(model.name))
        ).fetchone()
        stored = read_checkpoints(conn, model.name)
        ends = end_offsets(kafka, model.topics)
        partitions = [
            {
                "topic": topic,
                "partition": partition,
                "checkpoint": stored.get((topic, partition)),
                "end_offset": end,
                "lag": max(end - stored.get((topic, partition), 0), 0),
            }
            for (topic, partition), end in sorted(ends.items())
        ]
        report.append(
            {
                "model": model.name,
                "rows": int(count[0]) if count else 0,
                "lag": sum(p["lag"] for p in partitions),
                "partitions": partitions,
            }
        )
    return report
