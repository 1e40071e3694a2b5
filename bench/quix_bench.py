"""Quix Streams as a peer of the runtime: its own environment, its exactly-once JSON path.

``quixstreams`` is installed from the package index into a virtual environment
under the stack's cache folder (once; later runs reuse it), never into the
project's. :mod:`bench.quix_loop` runs there in a process of its own, over a
topic holding the same requests as JSON (its default serialisation), at the
runtime's commit interval. When the environment cannot be made (no package
index, say) the figure says so and the other loops still count.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.report import log
from tracebound.settings import KafkaSettings, StackSettings

PACKAGE = "quixstreams"
LOOP = Path(__file__).with_name("quix_loop.py")
RUN_TIMEOUT_S = 300.0


def environment() -> Path | str:
    """The Python of the environment holding Quix Streams, or why there is none."""
    folder = StackSettings().cache_dir / "bench" / PACKAGE
    python = folder / "bin" / "python"
    if _has_package(python):
        return python
    log(f"runtime: installing {PACKAGE} into {folder} (once)")
    try:
        if not python.exists():
            subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True, timeout=300)
        subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", PACKAGE],
            check=True,
            timeout=600,
            capture_output=True,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{PACKAGE} could not be installed: {_why(exc)}"
    return python if _has_package(python) else f"{PACKAGE} did not import after installing"


def _has_package(python: Path) -> bool:
    if not python.exists():
        return False
    probe = subprocess.run(
        [str(python), "-c", f"import {PACKAGE}"], check=False, capture_output=True
    )
    return probe.returncode == 0


def _why(exc: BaseException) -> str:
    if isinstance(exc, subprocess.CalledProcessError) and exc.stderr:
        lines = exc.stderr.decode(errors="replace").strip().splitlines()
        return lines[-1][:200] if lines else str(exc)
    return str(exc)[:200]


def quix_loop(
    kafka: KafkaSettings, *, in_topic: str, out_topic: str, count: int, interval_s: float
) -> dict[str, Any]:
    """Messages per second of Quix Streams' loop, or ``{"error": ...}`` when it cannot run."""
    python = environment()
    if isinstance(python, str):
        log(f"runtime: {python}")
        return {"error": python}
    bootstrap = kafka.client_config()["bootstrap.servers"]
    args = [bootstrap, in_topic, out_topic, str(count), str(interval_s)]
    try:
        done = subprocess.run(
            [str(python), str(LOOP), *args],
            capture_output=True,
            timeout=RUN_TIMEOUT_S,
            check=True,
        )
        result = json.loads(done.stdout.decode().strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError) as exc:
        log(f"runtime: the Quix Streams loop failed: {_why(exc)}")
        return {"error": f"the Quix Streams loop failed: {_why(exc)}"}
    seconds = float(result["seconds"])
    return {
        "messages": count,
        "seconds": round(seconds, 3),
        "messages_per_second": round(count / seconds, 1),
    }
