"""What every service process sets up before its loop: logs, stack dumps, metrics.

The roles' :class:`~tracebound.runtime.loop.ServiceLoop` and the sentinel's
deadline watch start the same way, so each serves ``/healthz`` and ``/metrics``
on its ``TRACEBOUND_<SERVICE>_METRICS_PORT`` and dumps its threads' stacks on
``SIGUSR1``.
"""

from __future__ import annotations

import faulthandler
import logging
import signal
import threading
from dataclasses import dataclass, field

from tracebound import logs
from tracebound.runtime.metrics import ServiceMetrics, serve_metrics
from tracebound.settings import RuntimeSettings
from tracebound.settings_check import report_unknown_variables

log = logging.getLogger("tracebound.runtime")


@dataclass
class ServiceProcess:
    """The settings and metrics of one service process, and its stop flag."""

    name: str
    runtime: RuntimeSettings
    metrics: ServiceMetrics
    stop: threading.Event = field(default_factory=threading.Event)

    def stop_on_signals(self) -> None:
        """SIGTERM/SIGINT set :attr:`stop`; the loop finishes what it is doing and returns."""
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: self.stop.set())


def start_process(name: str, runtime: RuntimeSettings | None = None) -> ServiceProcess:
    """Configure logging, ``kill -USR1 <pid>`` stack dumps and the metrics endpoint."""
    logs.configure()
    faulthandler.register(signal.SIGUSR1)
    runtime = runtime or RuntimeSettings.for_service(name)
    report_unknown_variables(name)
    metrics = ServiceMetrics(name)
    if runtime.metrics_port:
        server = serve_metrics(metrics, runtime.metrics_host, runtime.metrics_port)
        log.info("metrics on http://%s:%d/metrics", *server.server_address[:2])
    return ServiceProcess(name, runtime, metrics)
