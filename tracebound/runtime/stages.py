"""Where a role's time goes: decoding and encoding, its handler, Kafka, PostgreSQL.

The loop adds the time of each stage of a batch (not of each message: two clock
reads per stage and batch cost nothing next to the batch) to a process-wide
clock, served on ``/metrics`` as ``tracebound_stage_seconds_total``, so the
bench can tell which stage the next gain has to come from. Kafka time is the
commit and the polls made while a transaction is open; a poll waiting for input
is idle time and not counted. PostgreSQL time is counted by the tools that
query it, inside the handler's time.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal

from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

Stage = Literal["codec", "handler", "kafka", "postgres"]
STAGES: tuple[Stage, ...] = ("codec", "handler", "kafka", "postgres")


class StageClock:
    """Seconds per stage since the process started; thread-safe."""

    def __init__(self) -> None:
        self._seconds = dict.fromkeys(STAGES, 0.0)
        self._lock = threading.Lock()

    def add(self, stage: Stage, seconds: float) -> None:
        with self._lock:
            self._seconds[stage] += seconds

    @contextmanager
    def timing(self, stage: Stage) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.add(stage, time.perf_counter() - started)

    def seconds(self) -> dict[Stage, float]:
        with self._lock:
            return dict(self._seconds)


CLOCK = StageClock()


class StageCollector(Collector):
    """``tracebound_stage_seconds_total{service, stage}`` from the process's clock."""

    def __init__(self, service: str, clock: StageClock = CLOCK) -> None:
        self._service = service
        self._clock = clock

    def collect(self) -> Iterator[CounterMetricFamily]:
        family = CounterMetricFamily(
            "tracebound_stage_seconds",
            "Seconds the service loop spent per stage (postgres is inside handler)",
            labels=["service", "stage"],
        )
        for stage, seconds in self._clock.seconds().items():
            family.add_metric([self._service, stage], seconds)
        yield family


__all__ = ["CLOCK", "STAGES", "Stage", "StageClock", "StageCollector"]
