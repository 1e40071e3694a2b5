"""Rebuilding a read model from its topics, and the projections' status.

A rebuild reads each topic of the model from the beginning up to the end offsets
taken when it starts (event topics keep their whole history) into a new table
``<name>__rebuild`` shaped like the live one. Then one transaction, under the
model's advisory lock, renames the live table away, renames the new one in,
replaces the model's checkpoints with those end offsets and drops the old table.
Readers see either the old model or the new one, never an empty one. A running
projection process notices that its checkpoints moved (its next batch is refused
by the compare-and-set) and resumes from the rebuild's end offsets.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO

from confluent_kafka import KafkaException
from psycopg import sql

from projections.migrate import migrate
from projections.models import MODELS, ReadModel
from projections.store import (
    Checkpoints,
    Connection,
    lock_model,
    read_checkpoints,
    write_checkpoints,
)
from projections.timemerge import TimeMerge
from tracebound import kafka as edge
from tracebound.codec import Codec, make_codec
from tracebound.errors import PoisonInput, TransientError
from tracebound.events import Event
from tracebound.settings import KafkaSettings

BATCH = 2000
log = logging.getLogger("projections.rebuild")
PROGRESS_EVERY_S = 1.0


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


def _read_until(
    kafka: KafkaSettings,
    ends: Checkpoints,
    sink: Callable[[list[Event], int], None],
) -> None:
    """Feed every committed event before ``ends`` to ``sink`` in batches.

    Each partition's order is kept; across partitions events come merged by time
    (:mod:`projections.timemerge`), so the events of a run are written together.
    """
    codec = make_codec(kafka)
    consumer = edge.consumer(kafka, "projections-tool", config=edge.READ_TO_END)
    try:
        reader = edge.RangeReader(consumer, {}, ends)
        merge = TimeMerge()
        merge.track(reader.pending)
        ready: list[Any] = []
        while not reader.done or merge.queued() or ready:
            reading = set(reader.pending)
            messages = reader.next(BATCH, 0.5) if reading else []
            merge.add(messages)
            for key in reading - reader.pending:
                merge.done(key)
            ready += merge.take(BATCH - len(ready))
            merge.pace(consumer)
            if ready and (len(ready) >= BATCH or not messages or reader.done):
                sink(*_decoded(codec, ready))
                ready = []
    except KafkaException as exc:
        raise TransientError(f"reading topics for a rebuild failed: {exc}") from exc
    finally:
        consumer.close()


def _decoded(codec: Codec, messages: list[Any]) -> tuple[list[Event], int]:
    """The events of ``messages``, and how many could not be decoded."""
    events: list[Event] = []
    for message in messages:
        try:
            events.append(codec.decode(message.value(), message.topic()))
        except PoisonInput as exc:  # the roles dead-lettered it already
            log.warning("rebuild skipped an undecodable event: %s", exc)
    return events, len(messages) - len(events)


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


def rebuild_model(
    conn: Connection, kafka: KafkaSettings, model: ReadModel, progress: TextIO | None = sys.stderr
) -> RebuildReport:
    """Rebuild one model into a new table and swap it in; see the module docstring."""
    migrate(conn)
    target = f"{model.name}__rebuild"
    with conn.transaction():
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(target)))
        conn.execute(
            sql.SQL("CREATE TABLE {} (LIKE {} INCLUDING ALL)").format(
                sql.Identifier(target), sql.Identifier(model.name)
            )
        )
    ends = end_offsets(kafka, model.topics)
    started = time.monotonic()
    totals = {"events": 0, "skipped": 0, "rows": 0}
    last_report = started

    writer = model.rebuild_writer(conn, target)

    def sink(events: list[Event], skipped: int) -> None:
        nonlocal last_report
        with conn.transaction():
            totals["rows"] += writer.apply(events)
        totals["events"] += len(events) + skipped
        totals["skipped"] += skipped
        now = time.monotonic()
        if progress is not None and now - last_report >= PROGRESS_EVERY_S:
            last_report = now
            rate = totals["events"] / max(now - started, 1e-6)
            print(
                f"rebuild {model.name}: {totals['events']} events ({rate:.0f} events/s)",
                file=progress,
                flush=True,
            )

    _read_until(kafka, ends, sink)
    with conn.transaction():
        totals["rows"] += writer.flush()
    _swap(conn, model.name, ends)
    seconds = time.monotonic() - started
    if progress is not None:
        rate = totals["events"] / max(seconds, 1e-6)
        print(
            f"rebuilt {model.name}: {totals['events']} events, {totals['skipped']} skipped, "
            f"{seconds:.1f}s ({rate:.0f} events/s)",
            file=progress,
            flush=True,
        )
    return RebuildReport(
        model=model.name,
        events=totals["events"],
        skipped=totals["skipped"],
        rows=totals["rows"],
        seconds=seconds,
        end_offsets={f"{t}[{p}]": o for (t, p), o in sorted(ends.items())},
    )


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
