"""``tracebound_consumer_lag``: how far a consumer is behind the end of its partitions.

One gauge for the service loop and the projection workers. It is refreshed at
most every ``interval_s`` from the *cached* high watermarks (no broker round
trip in the loop), and partitions are forgotten when revoked, so a departed
partition leaves no stale series.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from confluent_kafka import KafkaException
from prometheus_client import Gauge

from tracebound.kafka.offsets import Key

log = logging.getLogger("tracebound.kafka")
WATERMARK_TIMEOUT_S = 1.0


class HasLagGauge(Protocol):
    lag: Gauge


class LagGauge:
    """The lag series of one consumer (``group``) in a metrics registry."""

    def __init__(self, metrics: HasLagGauge, group: str, interval_s: float = 10.0) -> None:
        self._metrics = metrics
        self._group = group
        self._interval_s = interval_s
        self._next = 0.0
        self._shown: dict[Key, int] = {}

    @property
    def total(self) -> int:
        """The lag of every partition shown, added up, as last refreshed."""
        return sum(self._shown.values())

    def due(self) -> bool:
        now = time.monotonic()
        if now < self._next:
            return False
        self._next = now + self._interval_s
        return True

    def set(self, topic: str, partition: int, lag: int) -> None:
        self._shown[(topic, partition)] = max(lag, 0)
        self._metrics.lag.labels(self._group, topic, str(partition)).set(max(lag, 0))

    def forget(self, partitions: Iterable[Key]) -> None:
        for key in partitions:
            if key in self._shown:
                del self._shown[key]
                self._metrics.lag.remove(self._group, key[0], str(key[1]))

    def refresh(self, consumer: Any, done: Callable[[Key], int | None] | None = None) -> None:
        """When due: per assigned partition, its end minus what is done.

        ``done`` says where a partition's work is done to (a checkpoint); without it,
        the consumer's position. Unknown (None or invalid) counts as the end for a
        position, which a consumer only lacks before its first fetch, and as the
        beginning for a checkpoint, which is missing only before the first batch.
        """
        if not self.due():
            return
        try:
            assigned = consumer.assignment()
            if done is None:
                position = {
                    (tp.topic, tp.partition): tp.offset for tp in consumer.position(assigned)
                }
            for tp in assigned:
                key = (tp.topic, tp.partition)
                _, high = consumer.get_watermark_offsets(
                    tp, timeout=WATERMARK_TIMEOUT_S, cached=True
                )
                if done is None:
                    at = position.get(key, -1)
                    reached = at if at >= 0 else high
                else:
                    reached = max(done(key) or 0, 0)
                self.set(tp.topic, tp.partition, high - reached)
        except KafkaException as exc:
            log.debug("lag update skipped: %s", exc)
