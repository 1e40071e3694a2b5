"""The role processes of a benchmark run: starting them, their CPU and memory, profiles."""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from bench.report import log
from services.executor.tools.settings import DEMO_ENV
from tracebound.settings import StackSettings
from tracebound.stack.services import service_states, start_services, stop_services
from tracebound.stack.stack import StackStatus
from tracebound.topology import PIPELINE_ROLES

ROLES = PIPELINE_ROLES


def _stat(pid: int | str) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (None when it is gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text(encoding="utf-8").rpartition(")")[2].split()
    except OSError:
        return None


def _ticks_by_parent() -> Counter[str]:
    """User + system CPU ticks of every live process, summed by its parent's pid."""
    by_parent: Counter[str] = Counter()
    for entry in os.listdir("/proc"):
        fields = _stat(entry) if entry.isdigit() else None
        if fields is not None:
            by_parent[fields[1]] += int(fields[11]) + int(fields[12])
    return by_parent


def tree_cpu_seconds(pid: int, children: Counter[str] | None = None) -> float:
    """CPU time of ``pid`` with its children, alive or gone (PostgreSQL's backends are
    the postmaster's); NaN when ``pid`` is gone. ``children``: one
    :func:`_ticks_by_parent` reading shared by several pids."""
    own = _stat(pid)
    if own is None:
        return math.nan
    alive = (_ticks_by_parent() if children is None else children)[str(pid)]
    reaped = sum(int(f) for f in own[11:15])  # its own and its reaped children's
    return (reaped + alive) / os.sysconf("SC_CLK_TCK")


class CpuMeter:
    """CPU seconds spent by named groups of processes (with their children) since made."""

    def __init__(self, groups: Mapping[str, Sequence[int]]) -> None:
        self._groups = {name: list(pids) for name, pids in groups.items()}
        self._before = self._read()

    def _read(self) -> dict[str, float]:
        children = _ticks_by_parent()
        return {
            name: sum(tree_cpu_seconds(pid, children) for pid in pids)
            for name, pids in self._groups.items()
        }

    def spent(self) -> dict[str, float]:
        after = self._read()
        return {name: after[name] - self._before[name] for name in self._groups}


def settle(
    groups: Mapping[str, Sequence[int]], busy_cores: float = 0.25, timeout_s: float = 60.0
) -> float:
    """Wait until ``groups`` together keep fewer than ``busy_cores`` busy over a second
    (what a burst left behind is done: projections caught up, the broker's work on its
    markers); returns the seconds waited, the timeout at most."""
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        meter = CpuMeter(groups)
        time.sleep(1.0)
        if sum(v for v in meter.spent().values() if not math.isnan(v)) < busy_cores:
            break
    return time.monotonic() - started


def stack_processes(status: StackStatus, roles: Sequence[str]) -> dict[str, list[int]]:
    """The stack's processes other than ``roles``, by name: every broker node, PostgreSQL,
    and each other running service (ingest, sentinel, projections)."""
    nodes = {"kafka": (status.kafka, *status.more_brokers), "postgres": (status.postgres,)}
    groups = {name: [c.pid for c in cs if c.running and c.pid] for name, cs in nodes.items()}
    for service in status.services:
        if service.running and service.pid and service.name.split("-")[0] not in roles:
            groups.setdefault(service.name, []).append(service.pid)
    return {name: pids for name, pids in groups.items() if pids}


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    """Resident set size of ``pid`` in MB (VmRSS; ``VmHWM``: its peak so far), NaN when
    unreadable."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text(encoding="utf-8").splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return math.nan


def free_port() -> int:
    """A loopback port nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def stage_seconds(port: int) -> dict[str, float]:
    """A role's ``tracebound_stage_seconds_total`` per stage (empty when unreadable)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
            text = reply.read().decode()
    except OSError:
        return {}
    return {
        sample.labels["stage"]: sample.value
        for family in text_string_to_metric_families(text)
        if family.name == "tracebound_stage_seconds"
        for sample in family.samples
        if sample.name.endswith("_total")
    }


class Roles:
    """The five roles as detached processes with a private state folder (pid files, logs)."""

    def __init__(
        self, stack_env: Mapping[str, str], overrides: Mapping[str, str] | None = None
    ) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="tracebound-bench-roles-"))
        self.settings = StackSettings(state_dir=self.folder)
        self.env = {**stack_env, **DEMO_ENV}  # the benchmark runs on the demo environment
        for role in ROLES:
            self.env[f"TRACEBOUND_{role.upper()}_MODE"] = "rules"
        # Each role serves /metrics on a port of its own: its per-stage seconds.
        self.metrics_ports = {role: free_port() for role in ROLES}
        for role, port in self.metrics_ports.items():
            self.env[f"TRACEBOUND_{role.upper()}_METRICS_PORT"] = str(port)
        self.env.update(overrides or {})  # e.g. the llm figure's modes and model endpoint

    def start(self) -> None:
        for note in start_services(self.settings, self.env, ROLES):
            log(note)

    def pids(self) -> dict[str, int]:
        return {
            s.name: s.pid
            for s in service_states(self.settings, None)
            if s.name in ROLES and s.pid is not None
        }

    def stop(self, keep_logs: bool = False) -> None:
        for note in stop_services(self.settings, ROLES):
            log(note)
        if keep_logs:
            log(f"role logs kept in {self.folder / 'services'}")
        else:
            shutil.rmtree(self.folder, ignore_errors=True)


@contextlib.contextmanager
def running_roles(
    stack_env: Mapping[str, str], overrides: Mapping[str, str] | None = None
) -> Iterator[Roles]:
    roles = Roles(stack_env, overrides)
    roles.start()
    failed = False
    try:
        yield roles
    except BaseException:
        failed = True
        raise
    finally:
        roles.stop(keep_logs=failed)


def py_spy() -> str | None:
    local = Path(sys.executable).parent / "py-spy"
    return str(local) if local.exists() else shutil.which("py-spy")


@dataclass
class Sampler:
    """``py-spy record`` attached to each role process, stopped with SIGINT."""

    out_dir: Path
    procs: dict[str, tuple[subprocess.Popen[bytes], Path]] = field(default_factory=dict)

    def start(self, pids: Mapping[str, int]) -> None:
        exe = py_spy()
        if exe is None:
            log("py-spy not found (pip install py-spy into the venv); no profile")
            return
        self.out_dir.mkdir(parents=True, exist_ok=True)
        for role, pid in pids.items():
            out = self.out_dir / f"{role}.collapsed.txt"
            argv = [exe, "record", "--pid", str(pid), "--rate", "100", "--nonblocking"]
            argv += ["--format", "raw", "--duration", "900", "-o", str(out)]
            proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.procs[role] = (proc, out)

    def stop(self) -> dict[str, dict[str, Any]]:
        for proc, _ in self.procs.values():
            proc.send_signal(signal.SIGINT)
        summaries: dict[str, dict[str, Any]] = {}
        for role, (proc, out) in self.procs.items():
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
            if out.exists():
                summaries[role] = summarise_collapsed(out)
                summaries[role]["file"] = str(out)
        return summaries


# Frames of the repository's own modules are shown relative to its root.
REPO_PREFIX = f"{Path(__file__).resolve().parents[1]}/"


def _frame_name(frame: str) -> str:
    """``func (path/to/file.py:123)`` → ``path/to/file.py:func`` relative to known roots."""
    func, _, where = frame.partition(" (")
    path = where.rstrip(")").rsplit(":", 1)[0]
    for marker in ("site-packages/", REPO_PREFIX, "lib/python3"):
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    return f"{path}:{func}"


def summarise_collapsed(path: Path, top: int = 15) -> dict[str, Any]:
    """Self and inclusive sample shares per function of a py-spy ``raw`` profile."""
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [_frame_name(f) for f in stack.split(";") if f]
        if not frames:
            continue
        total += count
        own[frames[-1]] += count
        for name in set(frames):
            inclusive[name] += count

    def share(counter: Counter[str]) -> list[tuple[str, float]]:
        return (
            [(k, round(100 * v / total, 1)) for k, v in counter.most_common(top)] if total else []
        )

    return {"samples": total, "self_pct": share(own), "inclusive_pct": share(inclusive)}


def roles_rss(pids: Mapping[str, int]) -> dict[str, float]:
    return {role: round(rss_mb(pid), 1) for role, pid in pids.items()}
