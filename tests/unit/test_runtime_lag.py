"""The consumer-lag gauge: refreshed on an interval, no stale series after a revoke."""

from __future__ import annotations

from prometheus_client import generate_latest

from tracebound.kafka import LagGauge
from tracebound.runtime.metrics import ServiceMetrics


def series(metrics: ServiceMetrics) -> list[str]:
    text = generate_latest(metrics.registry).decode()
    return [line for line in text.splitlines() if line.startswith("tracebound_consumer_lag{")]


def test_lag_is_shown_per_partition_and_forgotten_on_revoke() -> None:
    metrics = ServiceMetrics("planner")
    lag = LagGauge(metrics, "planner", interval_s=3600)
    assert lag.due() and not lag.due()  # once per interval
    lag.set("tracebound.requests", 0, 7)
    lag.set("tracebound.requests", 1, -3)  # a position past the cached end: never negative
    assert sorted(series(metrics)) == [
        'tracebound_consumer_lag{partition="0",service="planner",topic="tracebound.requests"} 7.0',
        'tracebound_consumer_lag{partition="1",service="planner",topic="tracebound.requests"} 0.0',
    ]
    lag.forget([("tracebound.requests", 0), ("tracebound.plans", 2)])
    assert [s.split("{")[1].split(",")[0] for s in series(metrics)] == ['partition="1"']
