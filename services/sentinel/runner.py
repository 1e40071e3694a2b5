"""The sentinel process: watch its share of the runs, give up on runs past the deadline.

It runs on the shared service runtime (:func:`tracebound.runtime.start_process`:
logs, ``/healthz`` and ``/metrics`` on ``TRACEBOUND_SENTINEL_METRICS_PORT``) but
not in the consume-transform-produce :class:`~tracebound.runtime.ServiceLoop`:
its verdicts come from the clock, not from an input. Each replica is a member of
the ``sentinel`` consumer group and watches the runs of the partitions the group
gives it (:mod:`~services.sentinel.ownership`), so replicas share the runs and a
run is watched by one of them. Deadline verdicts are sent in a transaction under
the replica's ``transactional.id`` (``sentinel-<replica>``), committed together
with the replica's position in its requests partitions: a zombie of the replica
is fenced, and a replica whose partitions went to another cannot commit. On
assignment it reads the last ``lookback`` of its partitions, so runs requested
before that window are not watched (documented limit).
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from confluent_kafka import KafkaException
from pydantic import Field
from pydantic_settings import SettingsConfigDict

from services.sentinel.deadline import DEFAULT_DEADLINE_S, deadline_s
from services.sentinel.ownership import Ownership
from services.sentinel.watch import SERVICE, Reader, RunState, Watch, deadline_verdict
from tracebound import kafka as edge
from tracebound import topics
from tracebound.codec import EventCodec, make_codec
from tracebound.errors import ConfigError, PoisonInput
from tracebound.kafka import Severity, severity_of
from tracebound.replica import ReplicaInUse, ReplicaLock
from tracebound.runtime import EXIT_REPLICA_IN_USE, ServiceProcess, start_process
from tracebound.settings import KafkaSettings, TraceboundSettings

log = logging.getLogger("tracebound.sentinel")
LAG_INTERVAL_S = 10.0
BATCH = 500


class SentinelSettings(TraceboundSettings):
    model_config = SettingsConfigDict(env_prefix="TRACEBOUND_SENTINEL_", frozen=True)

    deadline_s: float | None = Field(
        default=None, gt=0, description="unset: 300 s, or longer when llm-mode roles need it"
    )
    lookback_s: float = Field(default=3600.0, gt=0)
    tick_s: float = Field(default=1.0, gt=0)


class Sentinel:
    """Observes its partitions of the watched topics; sends a deadline verdict per stalled run."""

    def __init__(
        self,
        settings: SentinelSettings,
        kafka: KafkaSettings,
        process: ServiceProcess,
        deadline_s: float = DEFAULT_DEADLINE_S,
    ) -> None:
        self.settings = settings
        self.kafka = kafka
        self.process = process
        self.codec: EventCodec = make_codec(kafka)  # one codec: its schema caches shared
        self.deadline = timedelta(seconds=deadline_s)
        self._reader = Reader(self.codec.decode_head, self.codec.decode)
        self.watch = Watch(self.deadline, self._reader)
        self.member_id = f"{SERVICE}-{process.runtime.replica_id}"
        self._timeout_s = process.runtime.transaction_timeout_ms / 1000
        self._producer: Any = None
        self._lag = edge.LagGauge(process.metrics, SERVICE, LAG_INTERVAL_S)

    def run(self) -> None:
        with ReplicaLock(self.member_id, self.kafka.bootstrap_servers):
            self._build_producer()
            self._run(self._ownership())

    def _build_producer(self) -> None:
        timeout_ms = self.process.runtime.transaction_timeout_ms
        self._producer = edge.transactional_producer(self.kafka, self.member_id, timeout_ms)
        self._producer.init_transactions(self._timeout_s)

    def _ownership(self, *, rebuilt: bool = False) -> Ownership:
        return Ownership(self.kafka, self.member_id, self.settings.lookback_s, rebuilt=rebuilt)

    def _run(self, ownership: Ownership) -> None:
        log.info("sentinel watching with a %.0fs deadline", self.deadline.total_seconds())
        metrics, next_tick = self.process.metrics, time.monotonic()
        try:
            while not self.process.stop.is_set():
                metrics.beat()
                fatal = [p for p in ownership.poll() if edge.consumer_error(p) is Severity.FATAL]
                if ownership.repair() or fatal:  # a dead member (e.g. fenced): watch afresh
                    ownership.abandon()
                    self.watch = Watch(self.deadline, self._reader)
                    ownership = self._ownership(rebuilt=True)
                    continue
                released = ownership.take_released()
                if released:
                    self._lag.forget((t, p) for t in topics.copartitioned() for p in released)
                    log.info("%d watched runs handed over", self.watch.drop(released))
                messages = edge.next_batch(ownership.reader, BATCH, self.settings.tick_s)
                ownership.read(messages)
                self._observe(messages, ownership.owned)
                metrics.processed.labels(SERVICE).inc(len(messages))
                if time.monotonic() >= next_tick:
                    next_tick = time.monotonic() + self.settings.tick_s
                    self._give_up_on_overdue(ownership)
                self._lag.refresh(ownership.reader)
        finally:
            ownership.close()

    def _observe(self, messages: list[Any], owned: set[int]) -> None:
        for message in messages:
            value = message.value()
            if message.error() is None and value is not None and message.partition() in owned:
                try:
                    self.watch.observe(value, message.partition())
                except PoisonInput:
                    continue  # the roles dead-letter it; it shows no progress here

    def _give_up_on_overdue(self, ownership: Ownership) -> None:
        overdue = self.watch.overdue(datetime.now(UTC), ownership.settled())
        if not overdue:
            return
        try:
            self._send(overdue, ownership)
        except KafkaException as exc:
            for state in overdue:  # not sent: due again at the next tick, if still ours
                state.given_up = False
            self._recover(exc)
            return
        self.process.metrics.produced.labels(SERVICE).inc(len(overdue))
        for state in overdue:
            log.warning(
                "run past its deadline; answering as failed", extra={"run_id": state.run_id}
            )

    def _send(self, overdue: list[RunState], ownership: Ownership) -> None:
        producer = self._producer
        producer.begin_transaction()
        for state in overdue:
            verdict = deadline_verdict(state, self.deadline)
            producer.produce(
                topics.VERDICTS,
                key=state.run_id.encode(),
                value=self.codec.encode(verdict, topics.VERDICTS),
            )
        producer.send_offsets_to_transaction(
            ownership.progress(), ownership.group_metadata(), self._timeout_s
        )
        producer.commit_transaction(self._timeout_s)

    def _recover(self, exc: KafkaException) -> None:
        self.process.metrics.aborted.labels(SERVICE).inc()
        if severity_of(exc) is Severity.FATAL:
            log.error("fatal producer error, rebuilding the producer: %s", exc)
            self._build_producer()
            return
        log.warning("deadline verdicts not sent, aborting: %s", exc)
        try:
            self._producer.abort_transaction(self._timeout_s)
        except KafkaException as abort_exc:
            log.error("abort failed (%s), rebuilding the producer", abort_exc)
            self._build_producer()


def run(settings: SentinelSettings | None = None, kafka: KafkaSettings | None = None) -> int:
    process = start_process(SERVICE)
    process.stop_on_signals()
    settings = settings or SentinelSettings()
    try:
        deadline = deadline_s(settings.deadline_s)
    except ConfigError as exc:
        log.error("%s", exc)
        return 2
    try:
        Sentinel(settings, kafka or KafkaSettings(), process, deadline).run()
    except ReplicaInUse as exc:
        log.error("%s", exc)
        return EXIT_REPLICA_IN_USE
    return 0


def main() -> int:
    return run()
