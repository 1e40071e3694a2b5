"""The monitoring an incident suite runs on: real Prometheus, Alertmanager and VictoriaLogs.

Prometheus starts on a TSDB folder holding the incidents' backfilled history
(``promtool tsdb create-blocks-from openmetrics``), scrapes their live values from
a small exporter on loopback (a thread of this process, with the series' own job
and instance labels) and evaluates their alerting rules every second; Alertmanager
groups the alerts by service and namespace (one run per incident) and posts them to
the ingest's webhook. VictoriaLogs holds the incidents' log lines. Every wait is
bounded and fails with what the servers logged.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.support.prometheus import LOG_TAIL_CHARS, Monitoring, running_monitoring
from tests.support.victoria_logs import RunningVictoriaLogs, ensure_built, victoria_logs
from tracebound.stack.apt import ensure_binary

BACKFILL_TIMEOUT_S = 300
STREAM_FIELDS = "service,namespace,pod"
GROUP_BY = ("service", "namespace")


class IncidentEnvironmentError(RuntimeError):
    """A component of the incident environment did not start or take its data."""


def promtool(folder: Path) -> str:
    """promtool, from Debian's prometheus package (installed with apt-get when missing)."""
    ensure_binary("prometheus", "prometheus", folder / "apt.log")
    found = shutil.which("promtool") or "/usr/bin/promtool"
    if not Path(found).exists():
        raise IncidentEnvironmentError("promtool not found (Debian's prometheus package ships it)")
    return found


def backfill(openmetrics: str, folder: Path) -> Path:
    """A Prometheus TSDB folder holding the OpenMetrics text ``openmetrics`` as blocks."""
    folder.mkdir(parents=True, exist_ok=True)
    source = folder / "backfill.om"
    source.write_text(openmetrics, encoding="utf-8")
    data = folder / "prometheus-data"
    done = subprocess.run(
        [promtool(folder), "tsdb", "create-blocks-from", "openmetrics", str(source), str(data)],
        capture_output=True,
        text=True,
        timeout=BACKFILL_TIMEOUT_S,
        check=False,
    )
    (folder / "promtool.log").write_text(done.stdout + done.stderr, encoding="utf-8")
    if done.returncode != 0:
        tail = (done.stdout + done.stderr)[-LOG_TAIL_CHARS:]
        raise IncidentEnvironmentError(
            f"promtool create-blocks-from exit {done.returncode}:\n{tail}"
        )
    if not any(p.is_dir() for p in data.iterdir()):
        raise IncidentEnvironmentError(f"promtool wrote no block into {data}")
    return data


class _Exposition:
    """``body()`` rendered ahead of the scrapes: a scrape is answered at once with the
    latest rendering and starts the next one, so rendering many incidents on a busy
    machine never outlasts Prometheus' scrape timeout (values lag one scrape)."""

    def __init__(self, body: Callable[[], str]) -> None:
        self._body = body
        self._lock = threading.Lock()
        self._rendering = False
        self._latest = self._render()

    def _render(self) -> bytes | Exception:
        try:
            return self._body().encode()
        except Exception as exc:  # shown in Prometheus' target state
            return exc

    def _refresh(self) -> None:
        latest = self._render()
        with self._lock:
            self._latest, self._rendering = latest, False

    def served(self) -> bytes | Exception:
        """The latest rendering; a newer one is started unless one is under way."""
        with self._lock:
            latest, start = self._latest, not self._rendering
            self._rendering = True
        if start:
            threading.Thread(target=self._refresh, name="incident-exposition", daemon=True).start()
        return latest


class _Handler(BaseHTTPRequestHandler):
    exposition: _Exposition

    def do_GET(self) -> None:
        if self.path.split("?", 1)[0] != "/metrics":
            self.send_error(404)
            return
        payload = type(self).exposition.served()
        if isinstance(payload, Exception):
            self.send_error(500, f"{type(payload).__name__}: {payload}")
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: Prometheus scrapes every few seconds."""


@contextlib.contextmanager
def exporter(body: Callable[[], str]) -> Iterator[str]:
    """An HTTP server on a free loopback port serving ``body()`` at ``/metrics``;
    yields its ``host:port``."""
    handler = type("ExporterHandler", (_Handler,), {"exposition": _Exposition(body)})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="incident-exporter", daemon=True)
    thread.start()
    try:
        host, port = server.server_address[:2]
        yield f"{host!s}:{port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


@dataclass
class IncidentEnvironment:
    folder: Path
    monitoring: Monitoring
    logs: RunningVictoriaLogs
    exporter: str  # host:port

    @property
    def prometheus_url(self) -> str:
        return self.monitoring.prometheus_url

    @property
    def victorialogs_url(self) -> str:
        return self.logs.url

    def log_tails(self) -> str:
        """The tails of Prometheus', Alertmanager's and VictoriaLogs' logs."""
        text = self.logs.log.read_text(errors="replace") if self.logs.log.exists() else ""
        return (
            self.monitoring.logs()
            + f"\n--- victoria-logs.log ({self.logs.log}) ---\n{text[-LOG_TAIL_CHARS:]}"
        )

    def alerts(self) -> list[tuple[str, dict[str, str]]]:
        """The state (pending, firing) and labels of every active alert in Prometheus now."""
        alerts = self.monitoring.prometheus("/api/v1/alerts")["alerts"]
        return [(a.get("state", ""), a["labels"]) for a in alerts]

    def firing(self) -> list[dict[str, str]]:
        """The labels of every alert firing in Prometheus now."""
        return [labels for state, labels in self.alerts() if state == "firing"]

    def scrape_health(self) -> list[str]:
        """The exporter target's health and last error as Prometheus reports it."""
        targets = self.monitoring.prometheus("/api/v1/targets")["activeTargets"]
        return [f"{t['scrapeUrl']}: {t['health']} {t.get('lastError') or ''}" for t in targets]


def victoria_logs_server() -> Path:
    """The VictoriaLogs server (built and cached by ``scripts/ensure-victoria-logs.sh``)."""
    found = ensure_built()
    if isinstance(found, str):
        raise IncidentEnvironmentError(f"VictoriaLogs is not available: {found}")
    return found


@contextlib.contextmanager
def incident_environment(
    folder: Path,
    webhook: str,
    *,
    openmetrics: str,
    exposition: Callable[[], str],
    rules: str,
    log_lines: Sequence[dict[str, Any]],
    group_by: Sequence[str] = GROUP_BY,
) -> Iterator[IncidentEnvironment]:
    """Everything started in ``folder``; the alerts start firing once this yields
    (Prometheus evaluates the rules from its start). Stopped in reverse order."""
    folder.mkdir(parents=True, exist_ok=True)
    server = victoria_logs_server()
    data = backfill(openmetrics, folder / "prometheus")
    (folder / "victoria-logs").mkdir(exist_ok=True)
    with (
        victoria_logs(server, folder / "victoria-logs") as logs,
        exporter(exposition) as target,
    ):
        if log_lines:
            try:
                logs.ingest(list(log_lines), stream_fields=STREAM_FIELDS)
            except AssertionError as exc:
                tail = logs.log.read_text(errors="replace")[-LOG_TAIL_CHARS:]
                raise IncidentEnvironmentError(f"{exc}\n--- victoria-logs.log ---\n{tail}") from exc
        with running_monitoring(
            folder / "monitoring",
            webhook,
            rules,
            data_dir=data,
            scrape=(target,),
            scrape_interval="5s",
            group_by=group_by,
        ) as monitoring:
            yield IncidentEnvironment(folder, monitoring, logs, target)
