"""The service runtime: exactly-once consume-transform-produce, dead letters, metrics."""

from __future__ import annotations

import faulthandler
import logging
import signal

from tracebound import logs
from tracebound.runtime.loop import ServiceLoop
from tracebound.runtime.metrics import ServiceMetrics, serve_metrics
from tracebound.runtime.service import Handler, ServiceSpec, route_by_event
from tracebound.settings import KafkaSettings, RuntimeSettings
from tracebound.settings_check import report_unknown_variables

log = logging.getLogger("tracebound.runtime")


def run_service(spec: ServiceSpec, kafka: KafkaSettings | None = None) -> int:
    """Process entry point of a role: logging, metrics endpoint, signals, the loop."""
    logs.configure()
    faulthandler.register(signal.SIGUSR1)  # `kill -USR1 <pid>` dumps every thread's stack
    runtime = RuntimeSettings.for_service(spec.name)
    report_unknown_variables(spec.name)
    metrics = ServiceMetrics(spec.name)
    if runtime.metrics_port:
        server = serve_metrics(metrics, runtime.metrics_host, runtime.metrics_port)
        log.info("metrics on http://%s:%d/metrics", *server.server_address[:2])
    loop = ServiceLoop(spec, kafka=kafka, runtime=runtime, metrics=metrics)
    loop.install_signal_handlers()
    loop.run()
    return 0


__all__ = [
    "Handler",
    "ServiceLoop",
    "ServiceMetrics",
    "ServiceSpec",
    "route_by_event",
    "run_service",
    "serve_metrics",
]
