"""The service runtime: exactly-once consume-transform-produce, dead letters, metrics."""

from __future__ import annotations

from tracebound.runtime.loop import ServiceLoop
from tracebound.runtime.metrics import ServiceMetrics, serve_metrics
from tracebound.runtime.process import ServiceProcess, start_process
from tracebound.runtime.service import Handler, ServiceSpec, route_by_event
from tracebound.settings import KafkaSettings


def run_service(spec: ServiceSpec, kafka: KafkaSettings | None = None) -> int:
    """Process entry point of a role: logging, metrics endpoint, signals, the loop."""
    process = start_process(spec.name)
    for collector in spec.collectors:
        process.metrics.registry.register(collector)
    loop = ServiceLoop(spec, kafka=kafka, runtime=process.runtime, metrics=process.metrics)
    loop.install_signal_handlers()
    loop.run()
    return 0


__all__ = [
    "Handler",
    "ServiceLoop",
    "ServiceMetrics",
    "ServiceProcess",
    "ServiceSpec",
    "route_by_event",
    "run_service",
    "serve_metrics",
    "start_process",
]
