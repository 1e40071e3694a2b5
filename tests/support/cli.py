"""Running the ``tracebound`` command line as its own process, as a user does."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping

from tests.support.kafka_io import REPO


def run_cli(
    *args: str, env: Mapping[str, str], timeout_s: float = 120
) -> subprocess.CompletedProcess[str]:
    """``python -m tracebound.cli ARGS`` from the repository root with exactly ``env``."""
    return subprocess.run(
        [sys.executable, "-m", "tracebound.cli", *args],
        cwd=REPO,
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
