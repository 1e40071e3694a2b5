"""The projection process: one consumer (and one thread) per read model.

Progress lives in PostgreSQL, not in Kafka: on partition assignment the consumer
seeks to the checkpoints in ``projection_checkpoint``, and every batch commits its
rows together with the checkpoints it advanced (:func:`projections.store.commit_batch`).
Kafka's committed offsets are never written, so a crash at any instant resumes
exactly after the last committed batch.

The checkpoint of a partition is the consumer position after the batch, which
also steps over transaction markers at the end of a partition; a caught-up
projection therefore shows zero lag against the high watermark.

Failure policy: undecodable events are skipped with a warning (the roles have
already dead-lettered them) and their offsets still advance; a database failure
is retried with backoff and never skips a batch; SIGTERM lets each thread finish
its batch, then the process exits 0.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import psycopg
from confluent_kafka import OFFSET_BEGINNING, KafkaException, TopicPartition

from projections.models import MODELS, ReadModel
from projections.settings import ProjectionSettings
from projections.store import (
    Checkpoints,
    Connection,
    TopicPartitionKey,
    commit_batch,
    connect,
)
from projections.store import read_checkpoints as stored_checkpoints
from projections.timemerge import TimeMerge
from tracebound import kafka as edge
from tracebound.codec import Codec, make_codec
from tracebound.errors import PoisonInput
from tracebound.events import Event
from tracebound.runtime.metrics import ServiceMetrics
from tracebound.settings import KafkaSettings, PostgresSettings, RuntimeSettings

log = logging.getLogger("projections.runner")
LAG_INTERVAL_S = 10.0
DB_ERRORS = (psycopg.OperationalError, psycopg.InterfaceError)
UNKNOWN = -1
MERGE_BYTES = 16 << 20  # per read model; only a catch-up ever queues much
T = TypeVar("T")


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
        runtime: RuntimeSettings,
        settings: ProjectionSettings,
        metrics: ServiceMetrics,
        stop: threading.Event,
        codec: Codec | None = None,
    ) -> None:
        self.model = model
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
        self._cache = model.live_cache()
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

    def _on_assign(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        if self._cache is not None:
            self._cache.clear()
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
        if self._cache is not None:
            self._cache.clear()
        keys = [(tp.topic, tp.partition) for tp in partitions]
        self._merge.forget(keys)
        self._lag.forget(keys)
        for key in keys:
            self._positions.pop(key, None)

    # -- the loop ----------------------------------------------------------------------

    def _consumer(self) -> Any:
        consumer = edge.consumer(
            self.kafka,
            self.group,
            group=self.group,
            config=edge.READ_TO_END,  # a caught-up partition stops pacing the others
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
                advanced = self._advanced(consumer)
                if batch or advanced:
                    self._commit(consumer, batch, advanced)
                self._lag.refresh(consumer, self._positions.get)
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

    def _decode(self, batch: list[Any]) -> list[Event]:
        events: list[Event] = []
        for message in batch:
            try:
                events.append(self.codec.decode(message.value(), message.topic()))
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

    def _commit(
        self, consumer: Any, batch: list[Any], advanced: dict[TopicPartitionKey, int]
    ) -> None:
        started = time.perf_counter()
        events = self._decode(batch)
        expected = {key: self._positions.get(key) for key in advanced}
        refused: Checkpoints | None = self._with_db(
            "batch",
            lambda conn: commit_batch(
                conn, self.model, events, expected, advanced, cache=self._cache
            ),
        )
        if refused is not None:
            self._rewind(consumer, refused)
            return
        self._positions.update(advanced)
        self.metrics.processed.labels(self.group).inc(len(batch))
        self.metrics.batch_seconds.labels(self.group).observe(time.perf_counter() - started)

    def _rewind(self, consumer: Any, stored: Checkpoints) -> None:
        """Checkpoints were moved under us (a rebuild swap): resume from the stored ones."""
        log.warning("%s checkpoints changed outside this process; seeking to them", self.group)
        assigned = consumer.assignment()
        keys = [(tp.topic, tp.partition) for tp in assigned]
        self._merge.forget(keys)  # what it queued is re-read from the checkpoints
        self._merge.track(keys)
        consumer.resume(assigned)
        for tp in consumer.assignment():
            key = (tp.topic, tp.partition)
            offset = stored.get(key, OFFSET_BEGINNING)
            self._positions[key] = stored.get(key)
            try:
                consumer.seek(TopicPartition(tp.topic, tp.partition, offset))
            except KafkaException as exc:
                log.warning("seek failed for %s[%d]: %s", tp.topic, tp.partition, exc)


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


def model_workers(
    *,
    kafka: KafkaSettings,
    postgres: PostgresSettings,
    runtime: RuntimeSettings,
    settings: ProjectionSettings,
    metrics: ServiceMetrics,
    stop: threading.Event,
) -> list[ModelWorker]:
    """One worker per read model, sharing settings, metrics and the stop flag."""
    return [
        ModelWorker(
            model,
            kafka=kafka,
            postgres=postgres,
            runtime=runtime,
            settings=settings,
            metrics=metrics,
            stop=stop,
        )
        for model in MODELS.values()
    ]
