"""The projection process: one consumer (and one thread) per read model.

Progress lives in PostgreSQL, not in Kafka: on partition assignment the consumer
seeks to the checkpoints in ``projection_checkpoint``. Every batch is decoded and
folded as it comes (:mod:`projections.live`); once per commit window the rows it
changed are written together with the checkpoints they advanced
(:func:`projections.store.commit_batch`). Kafka's committed offsets are never
written, so a crash at any instant resumes exactly after the last commit.

The checkpoint of a partition is the consumer position (it steps over transaction
markers at a partition's end: a caught-up projection shows zero lag).

Failure policy: undecodable events are skipped with a warning (the roles have
already dead-lettered them) and their offsets still advance; an event the
reducers cannot fold is dead-lettered by the projection itself and skipped; text
PostgreSQL cannot store is written with U+FFFD in place (:mod:`projections.store`);
a database failure
is retried with backoff and never skips a batch; SIGTERM lets each thread finish
its window, then the process exits 0.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

import psycopg
from confluent_kafka import OFFSET_BEGINNING, KafkaException, TopicPartition

from projections.models import ReadModel
from projections.settings import ProjectionRuntimeSettings, ProjectionSettings
from projections.store import Checkpoints, Connection, TopicPartitionKey, commit_batch, connect
from projections.store import read_checkpoints as stored_checkpoints
from projections.timemerge import TimeMerge
from tracebound import kafka as edge
from tracebound.codec import DocDecoder, EventDoc, make_codec
from tracebound.errors import PoisonInput
from tracebound.events import DeadLetter
from tracebound.events import Producer as ProducerRef
from tracebound.runtime.dead_letters import dead_letter
from tracebound.runtime.metrics import ServiceMetrics
from tracebound.settings import KafkaSettings, PostgresSettings

log = logging.getLogger("projections.runner")
LAG_INTERVAL_S = 10.0
DB_ERRORS = (psycopg.OperationalError, psycopg.InterfaceError)
UNKNOWN = -1
# Per worker, what a catch-up queues: in the client and in the time merge. Since the
# client fetches again within milliseconds of having room, 2 MB each read as fast as
# 8 MB did (peak RSS of a catch-up ≈ 330 → ≈ 280 MB with three diagnosis_run workers).
MERGE_BYTES = 2 << 20
# The client's own share is its queue plus the fetch responses on their way, which land
# on a full queue: up to 512 KB per partition (a diagnosis_run worker reads nine) and
# 8 MB per response by default. Small fetches (32 KB per partition, 256 KB per
# response, a 512 KB queue) read a catch-up as fast and cut its peak RSS by a quarter
# (≈ 275 → ≈ 195 MB). A larger record is still fetched whole (the broker always sends the
# first one); librdkafka asks that the client's request cap fit in a fetch, and a
# consumer's requests are small.
READ = {
    **edge.READ_TO_END,
    "queued.max.messages.kbytes": "512",
    "fetch.max.bytes": str(256 << 10),
    "max.partition.fetch.bytes": str(32 << 10),
    "message.max.bytes": str(256 << 10),
}
T = TypeVar("T")


def projection_letter(group: str, message: Any, exc: Exception) -> DeadLetter:
    """The dead letter of an event a projection cannot hold, its id fixed by its place."""
    where = f"{group}:{message.topic()}:{message.partition()}:{message.offset()}"
    letter = dead_letter(message, exc, service=group, producer=ProducerRef(service=group))
    return letter.model_copy(update={"event_id": str(uuid.uuid5(uuid.NAMESPACE_URL, where))})


class StopRequested(Exception):
    """The process was asked to stop while waiting for the database."""


class ModelWorker:
    """Projects the topics of one read model into its table until stopped."""

    def __init__(
        self,
        model: ReadModel,
        *,
        kafka: KafkaSettings,
        postgres: PostgresSettings,
        runtime: ProjectionRuntimeSettings,
        settings: ProjectionSettings,
        metrics: ServiceMetrics,
        stop: threading.Event,
        codec: DocDecoder | None = None,
        dead_letters: Callable[[DeadLetter], None] | None = None,
    ) -> None:
        self.model = model
        self.dead_letters = dead_letters
        self.kafka = kafka
        self.postgres = postgres
        self.runtime = runtime
        self.settings = settings
        self.metrics = metrics
        self.stop = stop
        self.codec = codec or make_codec(kafka)
        self.group = model.group(settings)
        self._conn: Connection | None = None
        self._positions: dict[TopicPartitionKey, int | None] = {}
        self._lag = edge.LagGauge(metrics, self.group, LAG_INTERVAL_S)
        # Emptied on every rebalance: another instance may have written meanwhile.
        self._pending = model.live_writer()
        self._folded = 0  # messages folded since the last commit
        self._window_start: float | None = None
        self._merge = TimeMerge(max_bytes=MERGE_BYTES)

    # -- database ----------------------------------------------------------------------

    def _with_db(self, what: str, work: Callable[[Connection], T]) -> T:
        """Run ``work(conn)``, reconnecting with backoff while the database is unavailable."""
        backoff = self.runtime.retry_backoff_initial_ms / 1000
        while True:
            try:
                if self._conn is None or self._conn.closed:
                    self._conn = connect(self.postgres)
                return work(self._conn)
            except DB_ERRORS as exc:
                self.metrics.retries.labels(self.group).inc()
                log.warning(
                    "database unavailable during %s, retrying in %.1fs: %s", what, backoff, exc
                )
                if self._conn is not None:
                    self._conn.close()
                    self._conn = None
                if self.stop.wait(backoff):
                    raise StopRequested from exc
                backoff = min(backoff * 2, self.runtime.retry_backoff_max_ms / 1000)

    # -- assignment --------------------------------------------------------------------

    def _forget_folded(self) -> None:
        self._pending.clear()
        self._folded, self._window_start = 0, None

    def _on_assign(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        # Nothing folded is dropped: runs of partitions held before were forgotten on revoke.
        fenced = False
        try:
            stored: Checkpoints = self._with_db(
                "assignment", lambda conn: stored_checkpoints(conn, self.model.name)
            )
        except StopRequested:
            # Unknown checkpoints: -1 never matches a stored one, so any batch read from
            # these partitions is refused by the compare-and-set instead of written.
            stored, fenced = {}, True
        firsts = _first_offsets(consumer, [(tp.topic, tp.partition) for tp in partitions], stored)
        for tp in partitions:
            key = (tp.topic, tp.partition)
            self._positions[key] = UNKNOWN if fenced else stored.get(key)
            tp.offset = stored.get(key, firsts.get(key, OFFSET_BEGINNING))
        consumer.assign(partitions)
        consumer.resume(partitions)  # nothing carries a pause over from an earlier assignment
        self._merge.track((tp.topic, tp.partition) for tp in partitions)
        log.info("%s assigned %d partition(s) from its checkpoints", self.group, len(partitions))

    def _on_revoke(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        # What was folded is read again from the checkpoints by whoever gets it; the
        # partitions kept are sought back to theirs, since their folding is dropped too.
        self._forget_folded()
        keys = [(tp.topic, tp.partition) for tp in partitions]
        kept = [tp for tp in consumer.assignment() if (tp.topic, tp.partition) not in keys]
        self._merge.forget(keys)
        self._lag.forget(keys)
        for key in keys:
            self._positions.pop(key, None)
        if kept:
            held = {k: o for k, o in self._positions.items() if o is not None and o >= 0}
            self._seek(consumer, kept, held)

    # -- the loop ----------------------------------------------------------------------

    def _consumer(self) -> Any:
        consumer = edge.consumer(
            self.kafka,
            self.group,
            group=self.group,
            config=READ,  # a caught-up partition stops pacing the others
        )
        consumer.subscribe(
            list(self.model.topics),
            on_assign=self._on_assign,
            on_revoke=self._on_revoke,
            on_lost=self._on_revoke,
        )
        return consumer

    def run(self) -> None:
        consumer = self._consumer()
        log.info("projecting %s", self.model.name, extra={"service": self.group})
        try:
            while not self.stop.is_set():
                self.metrics.beat()
                messages = edge.next_batch(
                    consumer, self.runtime.batch_size, self.settings.idle_poll_ms / 1000
                )
                for message in messages:
                    edge.consumer_error(message)  # logs what is not an end of partition
                # Messages of a partition revoked inside consume() are left to its new owner.
                self._merge.add(messages)
                batch = self._merge.take(self.runtime.batch_size)
                self._merge.pace(consumer)
                if batch:
                    self._fold(batch)
                if self._window_due(more_waiting=bool(batch)):
                    advanced = self._advanced(consumer)
                    if self._folded or advanced:
                        self._commit(consumer, advanced)
                self._lag.refresh(consumer, self._positions.get)
            if self._folded:  # the window open when asked to stop
                self._commit(consumer, self._advanced(consumer))
        except StopRequested:
            log.info("%s stopped while waiting for the database", self.group)
        finally:
            consumer.close()
            if self._conn is not None:
                self._conn.close()

    def _advanced(self, consumer: Any) -> dict[TopicPartitionKey, int]:
        """Partitions whose checkpoint can move: to the position, or to the first message
        still queued in the time merge (invalid positions: none)."""
        moved: dict[TopicPartitionKey, int] = {}
        for tp in consumer.position(consumer.assignment()):
            key = (tp.topic, tp.partition)
            held = self._positions.get(key)
            queued = self._merge.first_queued(key)
            offset = tp.offset if queued is None else queued
            if offset >= 0 and (held is None or offset > held):
                moved[key] = offset
        return moved

    def _window_due(self, *, more_waiting: bool) -> bool:
        started, now = self._window_start, time.monotonic()
        return window_due(self.runtime, started, now, self._folded, more_waiting=more_waiting)

    def _fold(self, batch: list[Any]) -> None:
        decoded = self._decode(batch)
        table = self.model.name

        def fold(events: list[EventDoc]) -> None:
            self._with_db("fold", lambda conn: self._pending.fold(conn, table, events))

        try:
            fold([doc for _, doc in decoded])
        except (StopRequested, *DB_ERRORS):
            raise
        except Exception:  # an event the reducers cannot fold: find it, fold the others
            log.exception("%s could not fold a batch; folding its events one by one", self.group)
            for message, doc in decoded:
                try:
                    fold([doc])
                except (StopRequested, *DB_ERRORS):
                    raise
                except Exception as exc:
                    self._poison(message, exc)
        if self._window_start is None:
            self._window_start = time.monotonic()
        self._folded += len(batch)

    def _poison(self, message: Any, exc: Exception) -> None:
        """An event this read model cannot hold: a dead letter, and the partition moves on.

        Folds are joins, so the events folded before it (read again one by one) are
        unchanged; the letter's id is fixed by where the event is, so reading the
        window again after a crash does not make a second one.
        """
        self.metrics.dead_lettered.labels(self.group, type(exc).__name__).inc()
        log.error(
            "%s dead-letters an event it cannot fold: %s",
            self.group,
            exc,
            extra={
                "topic": message.topic(),
                "partition": message.partition(),
                "offset": message.offset(),
                "error_type": type(exc).__name__,
            },
        )
        if self.dead_letters is not None:
            self.dead_letters(projection_letter(self.group, message, exc))

    def _decode(self, batch: list[Any]) -> list[tuple[Any, EventDoc]]:
        events: list[tuple[Any, EventDoc]] = []
        for message in batch:
            try:
                events.append((message, self.codec.decode_doc(message.value(), message.topic())))
            except PoisonInput as exc:
                log.warning(
                    "skipped undecodable event: %s",
                    exc,
                    extra={
                        "topic": message.topic(),
                        "partition": message.partition(),
                        "offset": message.offset(),
                        "error_type": type(exc).__name__,
                    },
                )
                self.metrics.dead_lettered.labels(self.group, type(exc).__name__).inc()
        return events

    def _commit(self, consumer: Any, advanced: dict[TopicPartitionKey, int]) -> None:
        started = time.perf_counter()
        expected = {key: self._positions.get(key) for key in advanced}
        refused: Checkpoints | None = self._with_db(
            "commit",
            lambda conn: commit_batch(conn, self.model.name, self._pending, expected, advanced),
        )
        if refused is not None:
            self._rewind(consumer, refused)
            return
        self._pending.committed()
        self._positions.update(advanced)
        self.metrics.progress.committed()
        self.metrics.processed.labels(self.group).inc(self._folded)
        self._folded, self._window_start = 0, None
        self.metrics.batch_seconds.labels(self.group).observe(time.perf_counter() - started)

    def _rewind(self, consumer: Any, stored: Checkpoints) -> None:
        """Checkpoints were moved under us (a rebuild swap): resume from the stored ones."""
        log.warning("%s checkpoints changed outside this process; seeking to them", self.group)
        self._forget_folded()
        assigned = consumer.assignment()
        for tp in assigned:
            self._positions[(tp.topic, tp.partition)] = stored.get((tp.topic, tp.partition))
        self._seek(consumer, assigned, stored)

    def _seek(self, consumer: Any, partitions: list[TopicPartition], to: Checkpoints) -> None:
        """Read ``partitions`` again from ``to`` (absent: their beginning), queues dropped."""
        keys = [(tp.topic, tp.partition) for tp in partitions]
        self._merge.forget(keys)  # what it queued is read again
        self._merge.track(keys)
        consumer.resume(partitions)
        for key in keys:
            try:
                consumer.seek(TopicPartition(*key, to.get(key, OFFSET_BEGINNING)))
            except KafkaException as exc:
                log.warning("seek failed for %s[%d]: %s", *key, exc)


def window_due(
    runtime: ProjectionRuntimeSettings,
    started: float | None,
    now: float,
    folded: int,
    *,
    more_waiting: bool,
) -> bool:
    """Whether a worker commits now: its window (opened at ``started``, ``folded``
    messages in it) is over or big enough, or nothing more is waiting and the window is
    ``commit_min_ms`` old. With no window open, only when nothing is waiting: whether a
    checkpoint can move past a partition's transaction markers."""
    if started is None:
        return not more_waiting
    age = now - started
    if not more_waiting and age >= runtime.commit_min_ms / 1000:
        return True
    return folded >= runtime.commit_max_messages or age >= runtime.commit_interval_ms / 1000


def _first_offsets(
    consumer: Any, keys: list[TopicPartitionKey], stored: Checkpoints
) -> dict[TopicPartitionKey, int]:
    """The first offset of each partition without a checkpoint.

    Starting there explicitly spares the client its own look-up of
    ``OFFSET_BEGINNING`` before the first fetch (about half a second per
    assignment); if the broker cannot say, the client looks it up after all.
    """
    missing = [key for key in keys if key not in stored]
    if not missing:
        return {}
    try:
        return {key: low for key, (low, _high) in edge.watermarks(consumer, missing).items()}
    except KafkaException as exc:
        log.info("first offsets unknown, the client looks them up: %s", exc)
        return {}
