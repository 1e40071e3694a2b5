"""The service runtime: exactly-once consume-transform-produce, dead letters, metrics."""

from __future__ import annotations

import logging

from tracebound import tracing
from tracebound.errors import ConfigError
from tracebound.kafka import NotCopartitioned
from tracebound.replica import ReplicaInUse
from tracebound.runtime.loop import ServiceLoop
from tracebound.runtime.metrics import ServiceMetrics, serve_metrics
from tracebound.runtime.pacing import ModelBudget
from tracebound.runtime.process import ServiceProcess, start_process
from tracebound.runtime.service import AnyHandler, Handler, ServiceSpec, route_by_event
from tracebound.settings import KafkaSettings

log = logging.getLogger("tracebound.runtime")
# Not a crash to restart on: a supervisor restarting it would fence the other process.
EXIT_REPLICA_IN_USE = 3
EXIT_NOT_COPARTITIONED = 4


def run_service(spec: ServiceSpec, kafka: KafkaSettings | None = None) -> int:
    """Process entry point of a role: logging, metrics endpoint, signals, tracing, the loop.

    Settings that contradict each other stop the process at start (exit code 2),
    before it joins its group.
    """
    process = start_process(spec.name)
    for collector in spec.collectors:
        process.metrics.registry.register(collector)
    try:
        loop = ServiceLoop(spec, kafka=kafka, runtime=process.runtime, metrics=process.metrics)
    except ConfigError as exc:
        log.error("%s", exc)
        return 2
    loop.install_signal_handlers()
    tracing.configure(spec.name)
    try:
        loop.run()
    except ReplicaInUse as exc:
        log.error("%s", exc)
        return EXIT_REPLICA_IN_USE
    except NotCopartitioned as exc:
        log.error("%s", exc)
        return EXIT_NOT_COPARTITIONED
    finally:
        tracing.shutdown()
    return 0


__all__ = [
    "AnyHandler",
    "Handler",
    "ModelBudget",
    "ServiceLoop",
    "ServiceMetrics",
    "ServiceProcess",
    "ServiceSpec",
    "route_by_event",
    "run_service",
    "serve_metrics",
    "start_process",
]
