"""Debian's real Prometheus and Alertmanager, run by the tests on loopback.

Both binaries are installed with apt-get when missing (their own system services
never started) and run from a temporary folder, bound to 127.0.0.1 on free
ports: Prometheus evaluating every second with ``--web.enable-lifecycle`` (so a
changed rule file is picked up by ``POST /-/reload``) and resending active alerts
every second, Alertmanager with
clustering off and short group timers, its webhook pointed at the ingest. Every
wait is bounded and fails with what the servers logged, which is kept in the
folder.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx

from tracebound.stack.apt import ensure_binary

T = TypeVar("T")
START_TIMEOUT_S = 60.0
LOG_TAIL_CHARS = 4000

PROMETHEUS_YML = """\
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - {rules}
alerting:
  alertmanagers:
    - static_configs:
        - targets: ["127.0.0.1:{am_port}"]
"""

# An exporter's series as it labels them itself (its own job and instance labels).
SCRAPE_YML = """\
scrape_configs:
  - job_name: {job}
    honor_labels: true
    scrape_interval: {interval}
    static_configs:
      - targets: [{targets}]
"""

# group_by service (and the test's tag): all alerts of one service are one
# notification, one run. Alertmanager sends a new group at once, without its group_wait,
# when its first alert arrives more than group_wait after it started firing; the alerts
# of the same post inserted after that flush go out in a second notification (a second
# run). A loaded CI machine once split a group's two alerts so with a wait of 2 s (the
# alerts of an evaluation a reload interrupts are sent a second later), hence 6 s.
ALERTMANAGER_YML = """\
global:
  resolve_timeout: 5s
route:
  receiver: tracebound
  group_by: [{group_by}]
  group_wait: 6s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: tracebound
    webhook_configs:
      - url: {webhook}
        send_resolved: true
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_for(what: str, probe: Callable[[], T | None], timeout_s: float, logs: str = "") -> T:
    """``probe()`` once it returns something; an error naming ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        with contextlib.suppress(httpx.HTTPError):
            found = probe()
            if found is not None:
                return found
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f}s waiting for {what}\n{logs}")
        time.sleep(0.25)


@dataclass
class Monitoring:
    """The running pair: URLs, the rule file and the logs."""

    folder: Path
    prometheus_url: str
    alertmanager_url: str
    rules_path: Path
    client: httpx.Client = field(default_factory=lambda: httpx.Client(timeout=10, trust_env=False))

    def logs(self) -> str:
        """The tail of both servers' logs, for failure messages."""
        parts = []
        for name in ("prometheus", "alertmanager"):
            path = self.folder / f"{name}.log"
            text = path.read_text(errors="replace") if path.exists() else ""
            parts.append(f"--- {name}.log ({path}) ---\n{text[-LOG_TAIL_CHARS:]}")
        return "\n".join(parts)

    def set_rules(self, text: str) -> None:
        """Replace the rule file and reload; fails unless Prometheus loaded it."""
        self.rules_path.write_text(text, encoding="utf-8")
        reply = self.client.post(f"{self.prometheus_url}/-/reload")
        assert reply.status_code == 200, f"reload failed: {reply.text}\n{self.logs()}"

    def prometheus(self, path: str, **params: str) -> Any:
        """``data`` of a Prometheus API answer."""
        reply = self.client.get(f"{self.prometheus_url}{path}", params=params)
        reply.raise_for_status()
        return reply.json()["data"]

    def alert_states(self) -> list[str]:
        """The state of each active Prometheus alert."""
        return [a["state"] for a in self.prometheus("/api/v1/alerts")["alerts"]]

    def webhook_notifications(self) -> int:
        """Webhook notifications Alertmanager has sent so far (from its own metrics)."""
        text = self.client.get(f"{self.alertmanager_url}/metrics").text
        total = 0.0
        for line in text.splitlines():
            if line.startswith("alertmanager_notifications_total{") and 'webhook"' in line:
                total += float(line.rsplit(" ", 1)[1])
        return int(total)

    def wait(self, what: str, probe: Callable[[], T | None], timeout_s: float = 60) -> T:
        return wait_for(what, probe, timeout_s, self.logs())


def _start(argv: list[str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:  # the child keeps its own descriptor
        return subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=log.parent)


def _ready(mon: Monitoring, url: str, proc: subprocess.Popen[bytes]) -> bool | None:
    assert proc.poll() is None, f"{proc.args!r} exited with {proc.returncode}\n{mon.logs()}"
    return True if mon.client.get(f"{url}/-/ready").status_code == 200 else None


def stop_process(proc: subprocess.Popen[bytes], timeout_s: float = 15) -> None:
    """SIGTERM, then SIGKILL if it has not exited within ``timeout_s``."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


@contextlib.contextmanager
def running_monitoring(
    folder: Path,
    webhook: str,
    rules: str = "groups: []\n",
    *,
    data_dir: Path | None = None,
    scrape: Sequence[str] = (),
    scrape_interval: str = "5s",
    group_by: Sequence[str] = ("service", "tb_test"),
) -> Iterator[Monitoring]:
    """Prometheus and Alertmanager in ``folder``, Alertmanager posting to ``webhook``.

    ``data_dir``: Prometheus' TSDB folder (one with backfilled blocks, say);
    ``scrape``: ``host:port`` targets scraped every ``scrape_interval`` with their own
    labels (``honor_labels``); ``group_by``: the labels of one Alertmanager group (one run).
    """
    folder.mkdir(parents=True, exist_ok=True)
    prometheus = ensure_binary("prometheus", "prometheus", folder / "apt.log")
    alertmanager = ensure_binary(
        "prometheus-alertmanager", "prometheus-alertmanager", folder / "apt.log"
    )
    prom_port, am_port = free_port(), free_port()
    rules_path = folder / "rules.yml"
    rules_path.write_text(rules, encoding="utf-8")
    config = PROMETHEUS_YML.format(rules=rules_path, am_port=am_port)
    if scrape:
        targets = ", ".join(f'"{t}"' for t in scrape)
        config += SCRAPE_YML.format(job="exporter", interval=scrape_interval, targets=targets)
    (folder / "prometheus.yml").write_text(config, encoding="utf-8")
    (folder / "alertmanager.yml").write_text(
        ALERTMANAGER_YML.format(webhook=webhook, group_by=", ".join(group_by)), encoding="utf-8"
    )
    monitoring = Monitoring(
        folder=folder,
        prometheus_url=f"http://127.0.0.1:{prom_port}",
        alertmanager_url=f"http://127.0.0.1:{am_port}",
        rules_path=rules_path,
    )
    procs = [
        _start(
            [
                alertmanager,
                f"--config.file={folder / 'alertmanager.yml'}",
                f"--storage.path={folder / 'alertmanager-data'}",
                f"--web.listen-address=127.0.0.1:{am_port}",
                "--cluster.listen-address=",
            ],
            folder / "alertmanager.log",
        )
    ]
    try:
        procs.append(
            _start(
                [
                    prometheus,
                    f"--config.file={folder / 'prometheus.yml'}",
                    f"--storage.tsdb.path={data_dir or folder / 'prometheus-data'}",
                    f"--web.listen-address=127.0.0.1:{prom_port}",
                    "--web.enable-lifecycle",
                    # A reload drops the alerts of the evaluation it interrupts: resend
                    # every second (Alertmanager deduplicates) rather than every minute.
                    "--rules.alert.resend-delay=1s",
                ],
                folder / "prometheus.log",
            )
        )
        for url, proc in zip(
            (monitoring.alertmanager_url, monitoring.prometheus_url), procs, strict=True
        ):
            monitoring.wait(
                f"{url}/-/ready",
                lambda url=url, proc=proc: _ready(monitoring, url, proc),  # type: ignore[misc]
                START_TIMEOUT_S,
            )
        yield monitoring
    finally:
        for proc in reversed(procs):
            stop_process(proc)
        monitoring.client.close()
