"""VictoriaLogs' single-node server on a loopback port with a temporary data folder.

``scripts/ensure-victoria-logs.sh`` builds the server from the Go module proxy
(cached per machine); this module starts it, waits for ``/health`` and ingests
log lines through the JSON-lines API the way a log shipper does.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tests.support.prometheus import free_port, stop_process

ROOT = Path(__file__).resolve().parents[2]
ENSURE = ROOT / "scripts" / "ensure-victoria-logs.sh"
BUILD_TIMEOUT_S = 20 * 60
START_TIMEOUT_S = 30.0


def ensure_built() -> Path | str:
    """The server's path, or why it could not be had."""
    done = subprocess.run(
        ["bash", str(ENSURE)], capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, check=False
    )
    found = dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)
    if done.returncode != 0 or "victoria-logs" not in found:
        return f"ensure-victoria-logs.sh exit {done.returncode}: {done.stderr.strip()[-600:]}"
    return Path(found["victoria-logs"])


@dataclass
class RunningVictoriaLogs:
    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def ingest(
        self, entries: Sequence[dict[str, Any]], stream_fields: str = "topic,service"
    ) -> None:
        """POST ``entries`` to ``/insert/jsonline`` and wait until a query sees them all."""
        args = urllib.parse.urlencode(
            {"_stream_fields": stream_fields, "_msg_field": "_msg", "_time_field": "_time"}
        )
        body = "".join(json.dumps(entry) + "\n" for entry in entries).encode()
        # Each stream's filter must see its lines: the stream index becomes searchable
        # separately from the rows, so a count over ``*`` alone is not enough.
        names = [name for name in stream_fields.split(",") if name]
        streams = Counter(
            " ".join(f"{n}:={json.dumps(str(e.get(n, '')))}" for n in names) or "*" for e in entries
        )
        # ... and so does a time range: ask over the span of the lines, as a search does.
        times = sorted(str(e["_time"]) for e in entries if "_time" in e)
        end = (datetime.now(UTC) + timedelta(minutes=1)).isoformat()
        span = {"start": times[0], "end": end} if times else {}
        before = {stream: self.count(stream, **span) for stream in streams}
        request = urllib.request.Request(
            f"{self.url}/insert/jsonline?{args}",
            data=body,
            method="POST",
            headers={"Content-Type": "application/stream+json"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 200, response.status
        # VictoriaLogs makes freshly ingested lines searchable within about a second.
        deadline = time.monotonic() + 15
        while any(self.count(s, **span) < before[s] + n for s, n in streams.items()):
            if time.monotonic() > deadline:
                raise AssertionError(f"victoria-logs did not make {len(entries)} lines searchable")
            time.sleep(0.2)

    def count(self, where: str = "*", **window: str) -> int:
        """How many lines match the LogsQL filter ``where`` (within ``start``/``end``)."""
        args = urllib.parse.urlencode({"query": f"{where} | stats count() as total", **window})
        with urllib.request.urlopen(f"{self.url}/select/logsql/query?{args}", timeout=5) as resp:
            lines = [line for line in resp.read().decode().splitlines() if line.strip()]
        return int(json.loads(lines[0])["total"]) if lines else 0

    def stop(self) -> None:
        stop_process(self.process)


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=1) as response:
            return bool(response.status == 200)
    except OSError:
        return False


@contextlib.contextmanager
def victoria_logs(server: Path, folder: Path) -> Iterator[RunningVictoriaLogs]:
    """The server on a free 127.0.0.1 port, data in ``folder``; stopped afterwards."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = folder / "victoria-logs.log"
    argv = [
        str(server),
        f"-httpListenAddr=127.0.0.1:{port}",
        f"-storageDataPath={folder / 'data'}",
        "-retentionPeriod=100y",
    ]
    with log.open("ab") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=out)
    running = RunningVictoriaLogs(url=url, process=proc, log=log)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _healthy(url):
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = log.read_text(errors="replace")[-1500:]
                raise RuntimeError(f"victoria-logs did not become healthy at {url}:\n{tail}")
            time.sleep(0.1)
        yield running
    finally:
        running.stop()
