"""Prometheus metrics and the ``/healthz`` + ``/metrics`` HTTP endpoint of a service."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import orjson
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

from tracebound.runtime.progress import Progress
from tracebound.runtime.stages import StageCollector

DEFAULT_STUCK_AFTER_S = 300.0


class ServiceMetrics:
    """The figures every service loop reports, in a registry of its own."""

    def __init__(self, service: str) -> None:
        self.service = service
        self.registry = CollectorRegistry()
        self.registry.register(StageCollector(service))
        labels = ["service"]
        self.processed = Counter(
            "tracebound_messages_processed",
            "Input messages processed",
            labels,
            registry=self.registry,
        )
        self.produced = Counter(
            "tracebound_events_produced", "Events produced", labels, registry=self.registry
        )
        self.dead_lettered = Counter(
            "tracebound_messages_dead_lettered",
            "Input messages sent to the dead-letter topic",
            [*labels, "error_type"],
            registry=self.registry,
        )
        self.aborted = Counter(
            "tracebound_transactions_aborted",
            "Kafka transactions aborted and rewound",
            labels,
            registry=self.registry,
        )
        self.retries = Counter(
            "tracebound_transient_retries",
            "Batches retried after a transient failure",
            labels,
            registry=self.registry,
        )
        self.batch_seconds = Histogram(
            "tracebound_batch_seconds",
            "Time to process and commit one batch",
            labels,
            registry=self.registry,
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
        )
        self.lag = Gauge(
            "tracebound_consumer_lag",
            "Messages behind the end of each assigned partition",
            [*labels, "topic", "partition"],
            registry=self.registry,
        )
        self.unstable_offsets = Gauge(
            "tracebound_unstable_offsets",
            "Silent partitions whose group offsets a pending transaction holds, as last asked",
            labels,
            registry=self.registry,
        )
        self.swept = Counter(
            "tracebound_forgotten_transactions_swept",
            "Transactions the broker forgot, ended by an aborted transaction of this replica",
            labels,
            registry=self.registry,
        )
        self.progress = Progress(DEFAULT_STUCK_AFTER_S)
        Gauge(
            "tracebound_stuck",
            "1 while the loop keeps aborting, or has lag and no commit for its poll interval",
            registry=self.registry,
        ).set_function(lambda: float(self.progress.state().stuck))
        Gauge(
            "tracebound_last_commit_timestamp_seconds",
            "When the loop last committed (its start until then)",
            registry=self.registry,
        ).set_function(lambda: self.progress.last_commit)
        self._last_beat = time.monotonic()
        self.healthy = True

    def failed(self, error: str) -> None:
        """No progress this time: an abort, a transient retry or a handler crash."""
        self.progress.failed(error)

    def committed(self, service: str, inputs: int, outputs: int, dead: list[str], s: float) -> None:
        """Count one committed transaction: its inputs, its outputs, its dead letters."""
        self.processed.labels(service).inc(inputs)
        self.produced.labels(service).inc(outputs - len(dead))
        for error_type in dead:
            self.dead_lettered.labels(service, error_type).inc()
        self.batch_seconds.labels(service).observe(s)
        self.progress.committed()

    def beat(self) -> None:
        """Called by the loop on every iteration; /healthz checks it is recent."""
        self._last_beat = time.monotonic()
        self.progress.write_due()

    def alive(self, stale_after_s: float = 60.0) -> bool:
        return self.healthy and time.monotonic() - self._last_beat < stale_after_s


def serve_metrics(metrics: ServiceMetrics, host: str, port: int) -> ThreadingHTTPServer:
    """Start the endpoint in a daemon thread; returns the server (port 0 picks one)."""

    class _Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/healthz":
                ok = metrics.alive()
                body = b"ok\n" if ok else b"unhealthy\n"
                self._reply(200 if ok else 503, "text/plain; charset=utf-8", body)
            elif self.path == "/progress":
                body = orjson.dumps(metrics.progress.state().to_json())
                self._reply(200, "application/json", body)
            elif self.path == "/metrics":
                self._reply(200, CONTENT_TYPE_LATEST, generate_latest(metrics.registry))
            else:
                self._reply(404, "text/plain; charset=utf-8", b"not found\n")

        def _reply(self, code: int, ctype: str, body: bytes) -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer((host, port), _Handler)
    thread = threading.Thread(target=server.serve_forever, name="metrics", daemon=True)
    thread.start()
    return server
