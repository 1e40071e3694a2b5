"""One worker of a rebuild: the partitions of one group, every model, into the new tables.

Runs are co-partitioned on every topic (keyed by run id, same partition count), so
partition ``p`` of every topic holds all the events of the same runs. A group of
partition numbers can therefore be rebuilt on its own: its rows never meet another
group's. Each group is a process of its own when there are several, since folding
events is Python work bound by one core, and writes through its own connection.

Topics are read once for all the models rebuilt: a ``ToolInvoked`` decoded for
``diagnosis_run`` is handed to ``tool_invocation`` too. Across partitions events
come merged by time (:mod:`projections.timemerge`), so the events of a run are
written together; memory stays bounded by the merge's queue limit, the client's
prefetch and the run states a writer holds back.
"""

from __future__ import annotations

import logging
import sys
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from projections.history import HISTORY_READ, Progress, Slice, read_slice
from projections.models import MODELS, ReadModel
from projections.store import Connection, connect
from projections.timemerge import TimeMerge
from tracebound import kafka as edge
from tracebound.codec import DocDecoder, EventDoc, make_codec
from tracebound.collector import tune_collector
from tracebound.errors import PoisonInput
from tracebound.settings import KafkaSettings, PostgresSettings

BATCH = 2000
MERGE_BYTES = 32 << 20
log = logging.getLogger("projections.rebuild")


@dataclass(slots=True)
class GroupTotals:
    """What one group read and wrote, per model (messages of the model's topics)."""

    events: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    rows: Counter[str] = field(default_factory=Counter)


class _Sink:
    """Decodes each batch once and hands every model the events it projects."""

    def __init__(self, conn: Connection, models: list[ReadModel], codec: DocDecoder) -> None:
        self._conn, self._models, self._codec = conn, models, codec
        self._writers = [(m, m.rebuild_writer(conn, f"{m.name}__rebuild")) for m in models]
        self.totals = GroupTotals()

    def write(self, messages: list[Any]) -> None:
        events: list[EventDoc] = []
        topics: Counter[str] = Counter()
        bad: Counter[str] = Counter()
        for message in messages:
            topic = message.topic()
            topics[topic] += 1
            try:
                events.append(self._codec.decode_doc(message.value(), topic))
            except PoisonInput as exc:  # the roles dead-lettered it already
                bad[topic] += 1
                log.warning("rebuild skipped an undecodable event: %s", exc)
        with self._conn.transaction():
            for model, writer in self._writers:
                mine = [e for e in events if e.name in model.events]
                self.totals.rows[model.name] += writer.apply(mine)
                self.totals.events[model.name] += sum(topics[t] for t in model.topics)
                self.totals.skipped[model.name] += sum(bad[t] for t in model.topics)

    def flush(self) -> None:
        with self._conn.transaction():
            for model, writer in self._writers:
                self.totals.rows[model.name] += writer.flush()


def rebuild_group(
    conn: Connection,
    kafka: KafkaSettings,
    names: list[str],
    part: Slice,
    progress: Progress | None = None,
) -> GroupTotals:
    """Read ``part`` into the ``<model>__rebuild`` tables of the models ``names``."""
    sink = _Sink(conn, [MODELS[n] for n in names], make_codec(kafka))
    consumer = edge.consumer(kafka, "projections-tool", config=HISTORY_READ)
    merge = TimeMerge(max_bytes=MERGE_BYTES)
    merge.track(part.reading())
    ready: list[Any] = []
    try:
        for messages, finished in read_slice(kafka, part, batch=BATCH, consumer=consumer):
            merge.add(messages)
            for key in finished:
                merge.done(key)
            ready += merge.take(BATCH - len(ready))
            merge.pace(consumer)
            if len(ready) >= BATCH or (ready and not messages):
                sink.write(ready)
                if progress is not None:
                    progress.add(len(ready))
                ready = []
        ready += merge.take(merge.queued())
        if ready:
            sink.write(ready)
            if progress is not None:
                progress.add(len(ready))
        sink.flush()
    finally:
        consumer.close()
    return sink.totals


@dataclass(frozen=True, slots=True)
class GroupJob:
    """What a worker process needs to rebuild one partition group (sent to it pickled)."""

    kafka: KafkaSettings
    postgres: PostgresSettings
    names: list[str]
    part: Slice
    label: str
    quiet: bool


def group_process(job: GroupJob) -> GroupTotals:
    """:func:`rebuild_group` in a worker process of its own (its own connection)."""
    tune_collector()
    progress = Progress(job.label, job.part.total, None if job.quiet else sys.stderr)
    with connect(job.postgres) as conn:
        return rebuild_group(conn, job.kafka, job.names, job.part, progress)
