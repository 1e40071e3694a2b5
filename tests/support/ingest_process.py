"""``python -m services.ingest`` as a real process on a loopback port."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

from tests.support.prometheus import free_port, stop_process


@contextlib.contextmanager
def ingest_server(env: dict[str, str], log: Path, port: int | None = None) -> Iterator[str]:
    """The ingest on ``port`` (a free one by default), open (no token); yields its base URL."""
    port = port or free_port()
    env = {k: v for k, v in env.items() if k != "TRACEBOUND_INGEST_TOKEN"}
    env.update(TRACEBOUND_INGEST_HOST="127.0.0.1", TRACEBOUND_INGEST_PORT=str(port))
    url = f"http://127.0.0.1:{port}"
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "services.ingest"], env=env, stdout=out, stderr=out
        )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/healthz", timeout=2, trust_env=False).status_code == 200:
                    break
            time.sleep(0.2)
        else:
            raise AssertionError(f"ingest did not come up: {log.read_text()}")
        yield url
    finally:
        stop_process(proc, 30)
