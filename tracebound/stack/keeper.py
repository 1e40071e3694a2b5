"""``python -m tracebound.stack.keeper``: starts again the roles of the stack that died.

``tracebound up`` starts one keeper per state folder beside the roles. Every few
seconds it looks at each role replica that ``up`` started (its settings record
is there) and, when its process is gone, starts it again with the environment
``up`` gave, after a back-off that grows with each crash in a row (1 s to 60 s;
a replica that ran for five minutes starts the count again). The crash reason,
the last error its log holds, and the restart count go to ``<unit>.crashes.json``,
which ``tracebound status`` shows. ``down`` stops the keeper first; a check runs
only while no ``up``, ``restart`` or ``down`` holds the state folder's lock, so a
role they stop on purpose is never started behind their back.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tracebound import logs
from tracebound.settings import StackSettings
from tracebound.stack import services
from tracebound.stack.crashes import crashes_path
from tracebound.stack.paths import StackPaths
from tracebound.stack.process import try_state_lock

log = logging.getLogger("tracebound.keeper")

CHECK_EVERY_S = 2.0
BACKOFF_S = (1.0, 2.0, 5.0, 10.0, 30.0, 60.0)
STEADY_AFTER_S = 300.0
TAIL_BYTES = 64 << 10
MAX_REASON_CHARS = 400


@dataclass
class Crashes:
    """What the keeper knows of one replica's crashes in a row."""

    count: int = 0
    restarts: int = 0
    last_reason: str = ""
    last_at: str = ""
    due: float = 0.0
    started: float = field(default_factory=time.monotonic)


def crash_reason(log_file: Path) -> str:
    """The last error the replica's log holds (its JSON lines, or a bare traceback)."""
    try:
        with log_file.open("rb") as fh:
            fh.seek(max(fh.seek(0, os.SEEK_END) - TAIL_BYTES, 0))
            lines = fh.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return "its log cannot be read"
    for raw in reversed(lines):
        line = raw.strip()
        if not line:
            continue
        entry = _json(line)
        if entry is not None:
            if entry.get("level") in ("error", "critical"):
                last = str(entry.get("exc") or "").strip().splitlines()
                message = str(entry.get("msg", ""))
                return (f"{message}: {last[-1]}" if last else message)[:MAX_REASON_CHARS]
            continue
        if ":" in line and line.split(":", 1)[0].replace(".", "").isidentifier():
            return line[:MAX_REASON_CHARS]  # the last line of an uncaught traceback
    return "it exited without logging an error"


def _json(line: str) -> dict[str, Any] | None:
    if not line.startswith("{"):
        return None
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


class Keeper:
    """One pass per :data:`CHECK_EVERY_S`: start again what died, note why it died."""

    def __init__(self, settings: StackSettings, env: Mapping[str, str]) -> None:
        self._services = services
        self.settings = settings
        self.env = dict(env)
        self.folder = services.services_folder(settings)
        self.lock = StackPaths.from_settings(settings).lock_file
        self.crashes: dict[str, Crashes] = {}
        self.stop = threading.Event()

    def run(self) -> None:
        log.info("keeping the roles of %s running", self.folder)
        while not self.stop.wait(CHECK_EVERY_S):
            self._reap()
            with try_state_lock(self.lock) as locked:
                if locked:
                    self.check(time.monotonic())

    def _reap(self) -> None:
        """Collect the exit status of roles this keeper started (no zombies left)."""
        with contextlib.suppress(ChildProcessError):
            while True:
                pid, _status = os.waitpid(-1, os.WNOHANG)
                if pid == 0:
                    return

    def check(self, now: float) -> list[str]:
        """Start again each wanted replica whose process is gone and whose back-off is over."""
        started = []
        for role, index, unit in self._services.wanted_units(self.settings):
            pid, _ = self._services.unit_pid(self.settings, role, index)
            state = self.crashes.setdefault(unit, Crashes())
            if pid is not None:
                if now - state.started > STEADY_AFTER_S:
                    state.count = 0
                state.due = 0.0  # a death seen earlier is over: a new one waits its back-off
                continue
            if state.due == 0.0:  # seen dead just now: note why, then wait the back-off
                state.last_reason = crash_reason(self.folder / f"{unit}.log")
                state.last_at = datetime.now(UTC).isoformat(timespec="seconds")
                state.due = now + BACKOFF_S[min(state.count, len(BACKOFF_S) - 1)]
                state.count += 1
                self._write(unit, state)
                log.error("%s died (%s); starting it again", unit, state.last_reason)
            if now < state.due:
                continue
            new = self._services.launch_unit(self.settings, role, self.env, index)
            state.restarts += 1
            state.due, state.started = 0.0, now
            self._write(unit, state)
            started.append(f"restarted {unit} (pid {new})")
            log.info("restarted %s (pid %d)", unit, new)
        return started

    def _write(self, unit: str, state: Crashes) -> None:
        data = {
            "restarts": state.restarts,
            "crashes_in_a_row": state.count,
            "last_reason": state.last_reason,
            "last_at": state.last_at,
        }
        path = crashes_path(self.folder, unit)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(data))
        tmp.replace(path)


@contextlib.contextmanager
def _signals(stop: threading.Event) -> Iterator[None]:
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    yield


def main() -> int:
    logs.configure()
    keeper = Keeper(StackSettings(), os.environ)
    with _signals(keeper.stop):
        keeper.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
