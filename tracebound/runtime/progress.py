"""Health as progress, not a pid: whether a loop moves its input forward.

A process can be alive and still serve nothing: a transaction that aborts and
rewinds on every try, or a handler that never returns. :class:`Progress` keeps
what tells those apart (when the loop last committed, how many aborts and
retries came since, the last error and the input it was on) and calls the loop
*stuck* when it keeps aborting, or when it has lag and has committed nothing
for longer than its poll interval. It serves ``tracebound_stuck`` and
``tracebound_last_commit_timestamp_seconds`` on ``/metrics``, the whole state
as JSON on ``/progress``, and, under the local stack, a file beside the
process's pid file that ``tracebound status`` and the dashboard read.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import orjson

log = logging.getLogger("tracebound.runtime")

# Aborts or retries in a row, with no commit between them, that make a loop stuck.
STUCK_AFTER_FAILURES = 5
WRITE_EVERY_S = 2.0
MAX_ERROR_CHARS = 500
STATE_OPTION = "tracebound.state"  # the ``-X`` option the local stack starts services with


@dataclass(frozen=True, slots=True)
class ProgressState:
    """One reading; ``since_commit_s`` counts from the start until the first commit."""

    stuck: bool
    reason: str
    lag: int
    since_commit_s: float
    failures_since_commit: int
    last_error: str
    at: float

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class Progress:
    """What the loop reports as it goes; read from any thread."""

    def __init__(self, stuck_after_s: float, clock: Callable[[], float] = time.time) -> None:
        self.stuck_after_s = stuck_after_s
        self._clock = clock
        self._lock = threading.Lock()
        self._last_commit = clock()
        self._failures = 0
        self._last_error = ""
        self._lag = 0
        self._written = 0.0
        self._file = progress_file(os.getpid())

    def committed(self) -> None:
        with self._lock:
            self._last_commit = self._clock()
            self._failures = 0

    def failed(self, error: str) -> None:
        """An abort, a transient retry or a handler crash: no progress this time."""
        with self._lock:
            self._failures += 1
            self._last_error = error[:MAX_ERROR_CHARS]

    def lag(self, records: int) -> None:
        with self._lock:
            self._lag = records

    @property
    def last_commit(self) -> float:
        return self._last_commit

    def state(self) -> ProgressState:
        with self._lock:
            now = self._clock()
            since = max(now - self._last_commit, 0.0)
            reason = ""
            if self._failures >= STUCK_AFTER_FAILURES:
                reason = f"{self._failures} aborts or retries in a row without a commit"
            elif self._lag > 0 and since > self.stuck_after_s:
                reason = (
                    f"lag {self._lag} and no commit for {since:.0f}s"
                    f" (poll interval {self.stuck_after_s:.0f}s)"
                )
            return ProgressState(
                stuck=bool(reason),
                reason=reason,
                lag=self._lag,
                since_commit_s=round(since, 1),
                failures_since_commit=self._failures,
                last_error=self._last_error,
                at=now,
            )

    def write_due(self) -> None:
        """Write the state to the stack's progress file, at most every few seconds."""
        if self._file is None or time.monotonic() - self._written < WRITE_EVERY_S:
            return
        self._written = time.monotonic()
        try:
            self._file.parent.mkdir(parents=True, exist_ok=True)
            tmp = self._file.with_suffix(".tmp")
            tmp.write_bytes(orjson.dumps(self.state().to_json()))
            tmp.replace(self._file)
        except OSError as exc:
            log.warning("cannot write %s: %s", self._file, exc)
            self._file = None


def stack_state_dir() -> Path | None:
    """The state folder of the local stack that started this process (None: not one)."""
    state = getattr(sys, "_xoptions", {}).get(STATE_OPTION)
    return Path(state) if isinstance(state, str) and state else None


def progress_file(pid: int) -> Path | None:
    """Where a service started by the local stack writes its progress (None: not one)."""
    state = stack_state_dir()
    return progress_path(state, pid) if state is not None else None


def progress_path(state_dir: Path, pid: int) -> Path:
    return state_dir / "services" / "progress" / f"{pid}.json"


def read_progress(state_dir: Path, pid: int) -> ProgressState | None:
    """The last state the process ``pid`` wrote (None: none, or unreadable)."""
    try:
        data = orjson.loads(progress_path(state_dir, pid).read_bytes())
        return ProgressState(**data)
    except (OSError, ValueError, TypeError):
        return None
