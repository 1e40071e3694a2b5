"""The broker and database an incident suite runs on, shared by suites that run at once."""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tracebound.settings import StackSettings
from tracebound.stack import stack as local_stack
from tracebound.topology import PIPELINE_ROLES

if TYPE_CHECKING:
    from tests.support.stack import StackHandle


class HarnessError(RuntimeError):
    """The suite could not be run as designed (not a low score)."""


def log(message: str) -> None:
    """Progress goes to stderr so stdout stays the table."""
    print(f"incidents: {message}", file=sys.stderr, flush=True)


class _Leases:
    """Suites sharing the local stack: the last one to leave restores it.

    Each running suite holds a lease (a file named by its pid) under the stack's state
    folder; the roles a suite paused and whether a suite started the stack are noted
    there too. Leaving, a suite restarts the paused roles and stops a stack a suite
    started only when no other live suite holds a lease: a second suite started while
    the first ran must not lose its broker when the first one ends.
    """

    def __init__(self, settings: StackSettings) -> None:
        self.folder = Path(settings.state_dir) / "incident-suite"
        self.folder.mkdir(parents=True, exist_ok=True)
        self.mine = self.folder / f"lease-{os.getpid()}"

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        with (self.folder / "lock").open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def take(self, started: bool, paused: Sequence[str]) -> None:
        self.mine.touch()
        if started:
            (self.folder / "started").touch()
        noted = self.folder / "paused"
        before = noted.read_text().split() if noted.exists() else []
        noted.write_text(" ".join(dict.fromkeys([*before, *paused])))

    def release(self) -> tuple[bool, tuple[str, ...]] | None:
        """``(stop the stack, roles to restart)`` when this was the last lease, else None."""
        self.mine.unlink(missing_ok=True)
        for lease in self.folder.glob("lease-*"):
            with contextlib.suppress(ValueError):
                if Path(f"/proc/{int(lease.name.removeprefix('lease-'))}").exists():
                    return None
            lease.unlink(missing_ok=True)  # of a suite that died without leaving
        started, noted = self.folder / "started", self.folder / "paused"
        stop = started.exists()
        paused = tuple(noted.read_text().split()) if noted.exists() else ()
        started.unlink(missing_ok=True)
        noted.unlink(missing_ok=True)
        return stop, paused


@contextlib.contextmanager
def suite_stack() -> Iterator[StackHandle]:
    """The broker and database: an external one (``TRACEBOUND_KAFKA_BOOTSTRAP_SERVERS``) or
    the local stack, started if needed, its own roles paused meanwhile (they would share
    the roles' consumer groups); the last suite to leave restores it (see :class:`_Leases`)."""
    from tests.support.stack import StackHandle, external_stack  # noqa: PLC0415

    if os.environ.get("TRACEBOUND_KAFKA_BOOTSTRAP_SERVERS"):
        yield external_stack()
        return
    settings = StackSettings()
    leases = _Leases(settings)
    with leases.locked():
        status = local_stack.up(settings)
        # a role down but wanted too: the keeper would start it behind the suite's back
        paused = tuple(
            s.name for s in status.services if (s.running or s.wanted) and s.name in PIPELINE_ROLES
        )
        leases.take(bool(status.started), paused)
    started = list(status.started)
    log(f"stack at {status.kafka_bootstrap}" + (f" (started {started})" if started else ""))
    env = {
        "TRACEBOUND_KAFKA_BOOTSTRAP_SERVERS": status.kafka_bootstrap,
        "TRACEBOUND_PG_DSN": status.pg_dsn,
    }
    try:
        if not status.healthy:
            raise HarnessError("the local stack is not healthy: " + "; ".join(status.messages))
        for note in local_stack.pause(settings, paused) if paused else ():
            log(note)
        yield StackHandle(
            kind="local",
            bootstrap=status.kafka_bootstrap,
            pg_dsn=status.pg_dsn,
            stack_settings=settings,
        )
    finally:
        with leases.locked():
            last = leases.release()
            if last is None:
                log("another suite is using the stack: left as it is")
            elif last[0]:
                log("stopping the stack a suite started")
                local_stack.down(settings)
            elif last[1]:
                for note in local_stack.resume(settings, env, last[1]):
                    log(note)
