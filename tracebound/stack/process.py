"""Processes the stack starts: pid files, detached launch, liveness, shutdown, ports.

A pid file alone is not proof of ownership: after a reboot or a crash the number may
belong to an unrelated process. Every check therefore also reads
``/proc/<pid>/cmdline`` and requires a *marker* (our config file or data folder) in
it, so ``down`` can never signal a process it did not start.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import signal
import socket
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from tracebound.stack import progress

POLL_S = 0.2


def read_pid(pid_file: Path) -> int | None:
    """The pid recorded in ``pid_file`` (first line, as PostgreSQL writes it), or None."""
    try:
        first = pid_file.read_text(encoding="utf-8").splitlines()[0].strip()
        pid = int(first)
    except (OSError, IndexError, ValueError):
        return None
    return pid if pid > 0 else None


def write_pid(pid_file: Path, pid: int) -> None:
    """Record ``pid`` atomically so a concurrent reader never sees a half-written file."""
    tmp = pid_file.with_name(pid_file.name + ".tmp")
    tmp.write_text(f"{pid}\n", encoding="utf-8")
    tmp.replace(pid_file)


def is_alive(pid: int) -> bool:
    """Whether ``pid`` runs; an exited child of ours is reaped instead of counted alive."""
    if pid <= 0:
        return False
    try:
        reaped, _ = os.waitpid(pid, os.WNOHANG)
        if reaped == pid:
            return False
    except ChildProcessError:
        pass  # not our child: the normal case for a process started by an earlier `up`
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")
    except OSError:
        return True
    state = stat_line.rpartition(")")[2].split()[:1]
    return state not in (["Z"], ["X"])


def cmdline(pid: int) -> list[str]:
    """The argument vector of ``pid`` (empty if it is gone or unreadable)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode("utf-8", "replace") for part in raw.split(b"\0") if part]


def is_ours(pid: int, marker: str, program: str) -> bool:
    """Whether ``pid`` runs ``program`` (an argument or the executable's name) with ``marker``.

    ``marker`` must be a whole argument (our config file or data folder), so a sibling
    path such as ``server.properties.bak`` never passes for ours.

    The command line is read before liveness is probed so that a scan over unrelated
    pids never reaps (and steals the exit status of) a child someone else waits for.
    """
    args = cmdline(pid)
    if not args or not (program in args or Path(args[0]).name == program):
        return False
    return marker in args and is_alive(pid)


def find_ours(marker: str, program: str) -> int | None:
    """A running process of ours that has lost its pid file, found through ``/proc``."""
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if (
            entry.name.isdigit()
            and int(entry.name) != me
            and is_ours(int(entry.name), marker, program)
        ):
            return int(entry.name)
    return None


def owned_pid(
    pid_file: Path, marker: str, program: str, label: str, *, adopt: bool = True
) -> tuple[int | None, list[str]]:
    """The live pid behind ``pid_file`` if it is ours, plus notes about any repair made.

    A pid file whose process is gone (or is now somebody else's) is removed. With
    ``adopt``, a server of ours that runs without a pid file gets a new one, so ``down``
    can still stop it.
    """
    notes: list[str] = []
    pid = read_pid(pid_file)
    if pid is not None and is_ours(pid, marker, program):
        return pid, notes
    if pid_file.exists():
        pid_file.unlink(missing_ok=True)
        what = f"pid {pid} is not running it" if pid is not None else "unreadable"
        notes.append(f"removed stale {label} pid file {pid_file} ({what})")
    if adopt:
        found = find_ours(marker, program)
        if found is not None:
            write_pid(pid_file, found)
            notes.append(f"found {label} running as pid {found} without a pid file; adopted it")
            return found, notes
    return None, notes


def spawn_detached(argv: Sequence[str], output: Path, env: Mapping[str, str]) -> int:
    """Start ``argv`` in its own session with stdout+stderr appended to ``output``.

    A new session keeps the server alive when the terminal that ran ``up`` closes and
    keeps Ctrl-C in that terminal from reaching it. ``posix_spawn`` leaves no Popen
    object behind to warn about a child that outlives this process.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, str(output), flags, 0o644),
        (os.POSIX_SPAWN_DUP2, 1, 2),
    ]
    pid = os.posix_spawn(argv[0], list(argv), dict(env), file_actions=actions, setsid=True)
    _wait_exec(pid)
    return pid


def _wait_exec(pid: int, timeout_s: float = 10.0) -> None:
    """Wait until ``pid`` shows its own command line in ``/proc`` (or has exited).

    Right after the spawn the child's command line can still read empty (or as ours);
    a check in that moment (``status`` just after ``up``) would take the new process
    for somebody else's and remove its pid file.
    """
    ours = cmdline(os.getpid())
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and is_alive(pid):
        if cmdline(pid) not in ([], ours):
            return
        time.sleep(0.01)


def wait_exit(pid: int, timeout_s: float) -> bool:
    """Wait up to ``timeout_s`` for ``pid`` to exit; True if it did."""
    deadline = time.monotonic() + timeout_s
    while is_alive(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_S)
    return True


def terminate(
    pid: int, label: str, timeout_s: float, first_signal: signal.Signals = signal.SIGTERM
) -> str:
    """Ask ``pid`` to stop, then SIGKILL it if it outlives ``timeout_s``; say which was needed."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, first_signal)
    if wait_exit(pid, timeout_s):
        return f"stopped {label} (pid {pid})"
    progress(
        f"{label} (pid {pid}) still runs {timeout_s:.0f}s after {first_signal.name}; killing it"
    )
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    wait_exit(pid, 10.0)
    return f"killed {label} (pid {pid}) after {timeout_s:.0f}s"


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def port_in_use(host: str, port: int) -> bool:
    """Whether something listens on ``host:port`` (a bind attempt, so no traffic is sent).

    ``SO_REUSEADDR`` lets the bind succeed over lingering TIME_WAIT connections of a
    server we just stopped, so only a real listener counts as "in use".
    """
    with socket.socket(_family(host), socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                return True
            raise
    return False


def port_answers(host: str, port: int, timeout_s: float = 1.0) -> bool:
    """Whether a TCP connection to ``host:port`` is accepted."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def tail_lines(path: Path, lines: int = 5, max_bytes: int = 65_536) -> list[str]:
    """The last non-empty ``lines`` of a log (reading at most ``max_bytes`` from its end)."""
    try:
        with path.open("rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - max_bytes))
            text = fh.read().decode("utf-8", "replace")
    except OSError:
        return []
    return [line.strip() for line in text.splitlines() if line.strip()][-lines:]


def tail(path: Path, lines: int = 5) -> str:
    """The last lines of a log joined with `` | `` so they fit a one-line error message."""
    if not path.exists():
        return "(no log yet)"
    return " | ".join(tail_lines(path, lines)) or "(log is empty)"


@contextlib.contextmanager
def try_state_lock(lock_file: Path) -> Iterator[bool]:
    """The state folder's lock if nobody holds it (``True``), else ``False`` at once."""
    with _state_lock(lock_file, wait=False) as held:
        yield held


@contextlib.contextmanager
def state_lock(lock_file: Path) -> Iterator[None]:
    """Serialise ``up``/``down`` runs on one state folder (two brokers must never race)."""
    with _state_lock(lock_file, wait=True):
        yield


@contextlib.contextmanager
def _state_lock(lock_file: Path, *, wait: bool) -> Iterator[bool]:
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    with lock_file.open("a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if not wait:
                yield False
                return
            progress(f"waiting for another tracebound up/down on {lock_file.parent}…")
            fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield True
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
