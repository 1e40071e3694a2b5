"""``python -m projections``: the read-model projection process (wiring only).

One thread per read model, each with its own consumer and database connection;
``diagnosis_run``, the model with the most work per event, gets
``TRACEBOUND_PROJECTIONS_RUN_WORKERS`` threads (3) in its consumer group, so one
folds while another waits for PostgreSQL or Kafka.
The process migrates the schema first (retrying while PostgreSQL is down), serves
``/healthz`` and ``/metrics`` on the ``TRACEBOUND_PROJECTIONS_METRICS_PORT``, and on
SIGTERM lets every thread finish its commit window before exiting 0. The garbage collector
is tuned once start-up is done (:mod:`tracebound.collector`). If a thread dies of
an unexpected error the others are stopped and the process exits 1, so a
supervisor restarts it from the checkpoints.
"""

from __future__ import annotations

import faulthandler
import logging
import signal
import sys
import threading

from projections.migrate import migrate
from projections.models import MODELS
from projections.runner import DB_ERRORS, ModelWorker
from projections.settings import SERVICE, ProjectionRuntimeSettings, ProjectionSettings
from projections.store import connect
from tracebound import logs
from tracebound.collector import limit_malloc_arenas, tune_collector
from tracebound.errors import TransientError
from tracebound.events import DeadLetter
from tracebound.publisher import KafkaPublisher
from tracebound.runtime.metrics import ServiceMetrics, serve_metrics
from tracebound.settings import KafkaSettings, PostgresSettings, RuntimeSettings
from tracebound.settings_check import report_unknown_variables

log = logging.getLogger("projections")


def _migrate(postgres: PostgresSettings, runtime: RuntimeSettings, stop: threading.Event) -> bool:
    backoff = runtime.retry_backoff_initial_ms / 1000
    while True:
        try:
            with connect(postgres) as conn:
                applied = migrate(conn)
            if applied:
                log.info("applied migrations: %s", ", ".join(applied))
            return True
        except DB_ERRORS as exc:
            log.warning("database unavailable for migrations, retrying in %.1fs: %s", backoff, exc)
            if stop.wait(backoff):
                return False
            backoff = min(backoff * 2, runtime.retry_backoff_max_ms / 1000)


class DeadLetterSender:
    """Publishes the projections' own dead letters; made on first use (rarely needed)."""

    def __init__(self, kafka: KafkaSettings) -> None:
        self._kafka = kafka
        self._publisher: KafkaPublisher | None = None
        self._lock = threading.Lock()

    def send(self, letter: DeadLetter) -> None:
        try:
            with self._lock:
                if self._publisher is None:
                    self._publisher = KafkaPublisher(self._kafka)
                self._publisher.publish([letter])
        except TransientError as exc:  # the log line already says what was skipped
            log.error("could not publish the dead letter of run %s: %s", letter.run_id, exc)


def main() -> int:
    limit_malloc_arenas()  # before any thread starts
    logs.configure()
    faulthandler.register(signal.SIGUSR1)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    runtime = ProjectionRuntimeSettings.for_service(SERVICE)
    report_unknown_variables(SERVICE)
    settings = ProjectionSettings()
    kafka, postgres = KafkaSettings(), PostgresSettings()
    metrics = ServiceMetrics(SERVICE)
    if runtime.metrics_port:
        server = serve_metrics(metrics, runtime.metrics_host, runtime.metrics_port)
        log.info("metrics on http://%s:%d/metrics", *server.server_address[:2])
    if not _migrate(postgres, runtime, stop):
        return 0
    tune_collector()  # after start-up, before the workers grow the heap
    failed: list[BaseException] = []
    letters = DeadLetterSender(kafka)

    def work(worker: ModelWorker) -> None:
        try:
            worker.run()
        except BaseException as exc:
            log.exception("%s failed", worker.group)
            failed.append(exc)
            metrics.healthy = False
            stop.set()

    workers = [
        ModelWorker(
            model,
            kafka=kafka,
            postgres=postgres,
            runtime=runtime,
            settings=settings,
            metrics=metrics,
            stop=stop,
            dead_letters=letters.send,
        )
        for model in MODELS.values()
        for _ in range(settings.run_workers if model.name == "diagnosis_run" else 1)
    ]
    threads = [
        threading.Thread(target=work, name=f"{w.model.name}-{i}", args=(w,))
        for i, w in enumerate(workers)
    ]
    for thread in threads:
        thread.start()
    log.info("projections started", extra={"service": SERVICE})
    while any(t.is_alive() for t in threads):
        for thread in threads:
            thread.join(0.2)
    log.info("projections stopped", extra={"service": SERVICE})
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
