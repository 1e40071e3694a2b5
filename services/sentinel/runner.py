"""The sentinel process: watch every stage topic, give up on runs past the deadline.

It runs on the shared service runtime (:func:`tracebound.runtime.start_process`:
logs, ``/healthz`` and ``/metrics`` on ``TRACEBOUND_SENTINEL_METRICS_PORT``), but
not in the exactly-once :class:`~tracebound.runtime.ServiceLoop`: its verdicts
come from the clock, not from an input, and it belongs to no consumer group. It
needs no transactions either: it only ever sends deadline verdicts, and a
repeated one is harmless because the composer answers each run once. On start
it re-reads the last ``lookback`` of every watched topic, so runs requested
before that window are not watched (documented limit).
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from services.sentinel.deadline import DEFAULT_DEADLINE_S, deadline_s
from services.sentinel.watch import SERVICE, WATCHED, Watch, deadline_verdict
from tracebound import kafka as edge
from tracebound import topics
from tracebound.codec import Codec, make_codec
from tracebound.errors import ConfigError
from tracebound.runtime import ServiceProcess, start_process
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
    """Observes the watched topics and sends a deadline verdict for each stalled run."""

    def __init__(
        self,
        settings: SentinelSettings,
        kafka: KafkaSettings,
        process: ServiceProcess,
        deadline_s: float = DEFAULT_DEADLINE_S,
    ) -> None:
        self.settings = settings
        self.process = process
        self.codec: Codec = make_codec(kafka)
        self.deadline = timedelta(seconds=deadline_s)
        self.watch = Watch(self.deadline)
        self._consumer: Any = edge.consumer(kafka, SERVICE)
        self._producer: Any = edge.producer(kafka, SERVICE)
        self._lag = edge.LagGauge(process.metrics, SERVICE, LAG_INTERVAL_S)

    def run(self) -> None:
        since_ms = int((time.time() - self.settings.lookback_s) * 1000)
        keys = edge.partitions(self._consumer, WATCHED)
        edge.assign(self._consumer, edge.offsets_since(self._consumer, keys, since_ms))
        log.info("sentinel watching with a %.0fs deadline", self.deadline.total_seconds())
        metrics, next_tick = self.process.metrics, time.monotonic()
        try:
            while not self.process.stop.is_set():
                metrics.beat()
                messages = edge.next_batch(self._consumer, BATCH, self.settings.tick_s)
                for event in edge.decoded(self.codec, messages):
                    self.watch.observe(event)
                metrics.processed.labels(SERVICE).inc(len(messages))
                if time.monotonic() >= next_tick:
                    next_tick = time.monotonic() + self.settings.tick_s
                    self._give_up_on_overdue()
                self._lag.refresh(self._consumer)
        finally:
            self._producer.flush(30)
            self._consumer.close()

    def _give_up_on_overdue(self) -> None:
        for state in self.watch.overdue(datetime.now(UTC)):
            verdict = deadline_verdict(state, self.deadline)
            self._producer.produce(
                topics.VERDICTS,
                key=state.run_id.encode(),
                value=self.codec.encode(verdict, topics.VERDICTS),
            )
            self.process.metrics.produced.labels(SERVICE).inc()
            log.warning(
                "run past its deadline; answering as failed", extra={"run_id": state.run_id}
            )
        self._producer.poll(0)


def run(settings: SentinelSettings | None = None, kafka: KafkaSettings | None = None) -> int:
    process = start_process(SERVICE)
    process.stop_on_signals()
    settings = settings or SentinelSettings()
    try:
        deadline = deadline_s(settings.deadline_s)
    except ConfigError as exc:
        log.error("%s", exc)
        return 2
    Sentinel(settings, kafka or KafkaSettings(), process, deadline).run()
    return 0


def main() -> int:
    return run()
