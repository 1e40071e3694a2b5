"""The pipeline's role processes as part of the local stack.

``tracebound up`` starts one process per role (``python -m services.<role>``, or the
module named in ``ROLE_MODULES``: the read-model projections run as ``projections``) in
its own session, with its log and pid file in ``<state>/services``; ``down``
stops them with SIGTERM (each finishes or aborts its open transaction) before it
stops the broker. The state folder is passed as a ``-X`` option that Python
ignores, so a pid is recognised as ours only if its command line names this
very state folder.

Next to each pid file is the record of the settings the process was started with
(:mod:`tracebound.stack.service_env`). ``up`` restarts a running role whose
settings differ from the current environment; restarting is safe for every role,
since each stops at a transaction boundary (its successor, with the same
``transactional.id``, fences anything left open) or at a projection checkpoint.
A role started without a record (by an older version) is left running, with the
command that applies the current settings: what it runs with cannot be known.

``up --replicas N`` (or ``--replicas executor=3``) runs N processes of a role that
consumes as a group member. Replica 1 is the role's usual process; replica *i* is
``<role>-<i>`` (its own pid file, log and record) with the replica id of the first
plus ``-<i>``, so each has its own ``transactional.id`` and group membership. Without
``--replicas``, ``up`` keeps the replicas that run; ``down`` stops them all.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tracebound import resources
from tracebound.cli import load_settings_classes
from tracebound.errors import InvalidInputError
from tracebound.replica import default_replica_id
from tracebound.runtime.progress import ProgressState, read_progress
from tracebound.settings import KafkaSettings, StackSettings, prefix_for, settings_classes
from tracebound.stack.crashes import crashes_path, read_crashes
from tracebound.stack.lag import Lag, group_lag
from tracebound.stack.process import owned_pid, spawn_detached, terminate, write_pid
from tracebound.stack.service_env import (
    EnvRecord,
    read_record,
    record_path,
    remove_record,
    write_record,
)
from tracebound.topology import ROLES

# Each role's input topics (its consumer group's), in start order; from the topology.
ROLE_INPUTS: dict[str, tuple[str, ...]] = {role.name: role.input_topics for role in ROLES}
# The module a role runs as, when it is not ``services.<role>``.
ROLE_MODULES: dict[str, str] = {"projections": "projections"}
# Roles whose progress is a checkpoint in PostgreSQL, not a Kafka consumer group's
# committed offsets: Kafka cannot tell their lag, so status shows none for them
# (``tracebound projections status`` shows checkpoints against end offsets).
CHECKPOINTED_ROLES = frozenset({"projections"})
# Roles that are group members without being a consume-transform-produce loop: the
# sentinel watches the run-keyed topics as one consumer group, each replica the runs
# of its own partitions.
WATCHING_GROUPS = frozenset({"sentinel"})
STOP_TIMEOUT_S = 30.0
KEEPER = "tracebound.stack.keeper"  # the module that starts dead roles again
MAX_REPLICAS = 9


@dataclass(frozen=True, slots=True)
class ServiceState:
    name: str
    running: bool
    pid: int | None
    log: str
    lag: Lag | None
    record: EnvRecord | None = None  # what it was started with, if known
    changes: tuple[str, ...] = ()  # its settings that differ from the current ones
    wanted: bool = False  # ``up`` started it and nothing stopped it on purpose
    progress: ProgressState | None = None  # what the process last said of its progress
    crashes: Mapping[str, Any] | None = None  # what the keeper noted of its crashes

    @property
    def state(self) -> str:
        """``running``, ``stuck`` (alive, no progress), ``down`` (wanted, not running)
        or ``stopped``."""
        if self.running:
            return "stuck" if self.progress is not None and self.progress.stuck else "running"
        return "down" if self.wanted else "stopped"

    @property
    def healthy(self) -> bool:
        return self.state in ("running", "stopped")

    @property
    def problem(self) -> str:
        """Why it is not healthy, in a few words ('' when it is)."""
        if self.state == "stuck" and self.progress is not None:
            error = f"; last error: {self.progress.last_error}" if self.progress.last_error else ""
            return f"{self.name} is stuck: {self.progress.reason}{error}"
        if self.state == "down":
            why = (self.crashes or {}).get("last_reason")
            return f"{self.name} is down" + (f": {why}" if why else "")
        return ""

    @property
    def settings(self) -> str:
        """``current``, ``changed``, ``unknown`` (no record) or ``-`` when stopped."""
        if not self.running:
            return "-"
        if self.record is None:
            return "unknown"
        return "changed" if self.changes else "current"

    @property
    def mode(self) -> str | None:
        return self.record.mode() if self.record is not None else None

    @property
    def backends(self) -> dict[str, str]:
        """Its backends as recorded, defaults taken from every settings class there is."""
        if self.record is None:
            return {}
        load_settings_classes()
        return self.record.backends(settings_classes())


def services_folder(settings: StackSettings) -> Path:
    """Where the services' pid files, logs, records and progress files live."""
    return settings.state_dir.expanduser().absolute() / "services"


def _marker(settings: StackSettings) -> str:
    return f"tracebound.state={settings.state_dir.expanduser().absolute()}"


def role_module(role: str) -> str:
    return ROLE_MODULES.get(role, f"services.{role}")


def check_roles(names: Sequence[str]) -> tuple[str, ...]:
    """``names`` in start order, all roles when empty; an unknown one is invalid input."""
    unknown = [n for n in names if n not in ROLE_INPUTS]
    if unknown:
        raise InvalidInputError(
            f"unknown role {', '.join(unknown)}; the roles are {', '.join(ROLE_INPUTS)}"
        )
    return tuple(r for r in ROLE_INPUTS if r in names) if names else tuple(ROLE_INPUTS)


def service_env(env: Mapping[str, str]) -> dict[str, str]:
    """The environment of a service process: this one's plus ``env`` (the stack's)."""
    # Few malloc arenas: the services are threaded (librdkafka, the projection workers)
    # and glibc's default of 8 per core keeps freed memory resident. ``PYTHONPATH``
    # names the application folders, so ``-m services.<role>`` runs from any working
    # directory, in a checkout and in an installed wheel alike.
    return resources.child_env({"MALLOC_ARENA_MAX": "2", **os.environ, **env})


def replicable(role: str) -> bool:
    """Roles that share their work as a consumer group can run several replicas (the
    projections' workers are group members too: replicas split the partitions)."""
    return bool(ROLE_INPUTS.get(role)) or role in WATCHING_GROUPS


def parse_replicas(items: Sequence[str]) -> dict[str, int]:
    """``["2"]`` → 2 of every pipeline role; ``["executor=3"]`` → 3 executors.

    The projections replicate only when named (``projections=3``): their replicas
    speed up a catch-up, and each holds its own share of the runs in memory."""
    wanted: dict[str, int] = {}
    every = [r for r in ROLE_INPUTS if replicable(r) and r not in CHECKPOINTED_ROLES]
    for item in items:
        role, sep, count = item.rpartition("=")
        roles = [role] if sep else every
        if sep and not replicable(role):
            choices = ", ".join(r for r in ROLE_INPUTS if replicable(r))
            raise InvalidInputError(f"--replicas {item}: only {choices} run as replicas")
        if not count.isdigit() or not 1 <= int(count) <= MAX_REPLICAS:
            raise InvalidInputError(
                f"--replicas {item}: give a count from 1 to {MAX_REPLICAS}, alone or as ROLE=N"
            )
        wanted.update(dict.fromkeys(roles, int(count)))
    return wanted


def unit_name(role: str, index: int) -> str:
    """Replica 1 is the role itself; replica ``i`` is ``<role>-<i>``."""
    return role if index == 1 else f"{role}-{index}"


def replica_env(role: str, index: int, env: Mapping[str, str]) -> Mapping[str, str]:
    """A replica's environment: the role's, with a replica id of its own past the first."""
    if index == 1:
        return env
    variable = f"{prefix_for(role)}REPLICA_ID"
    return {**env, variable: f"{env.get(variable) or default_replica_id()}-{index}"}


def _running_replicas(settings: StackSettings, role: str) -> list[int]:
    """Indexes past 1 of the role's replicas with a pid file or a record, in order."""
    pattern = re.compile(rf"{re.escape(role)}-(\d+)\.(?:pid|env\.json)")
    found = (pattern.fullmatch(p.name) for p in services_folder(settings).glob(f"{role}-*"))
    return sorted({int(m.group(1)) for m in found if m is not None})


def wanted_units(settings: StackSettings) -> list[tuple[str, int, str]]:
    """``(role, index, unit)`` of every replica ``up`` started and nothing stopped since."""
    return [
        (role, index, unit_name(role, index))
        for role in ROLE_INPUTS
        for index in _units(settings, role)
        if record_path(services_folder(settings), unit_name(role, index)).exists()
    ]


def _units(settings: StackSettings, role: str, wanted: int | None = None) -> list[int]:
    """The replicas to start or keep: 1…``wanted``, or every one that runs."""
    if wanted is not None:
        return list(range(1, wanted + 1))
    return [1, *_running_replicas(settings, role)]


def unit_pid(settings: StackSettings, role: str, index: int = 1) -> tuple[int | None, list[str]]:
    unit = unit_name(role, index)
    pid_file = services_folder(settings) / f"{unit}.pid"
    return owned_pid(pid_file, _marker(settings), role_module(role), unit, adopt=False)


def launch_unit(settings: StackSettings, role: str, env: Mapping[str, str], index: int = 1) -> int:
    folder, unit = services_folder(settings), unit_name(role, index)
    env = replica_env(role, index, env)
    argv = [sys.executable, "-X", _marker(settings), "-m", role_module(role)]
    pid = spawn_detached(argv, folder / f"{unit}.log", env)
    write_pid(folder / f"{unit}.pid", pid)
    write_record(folder, EnvRecord.of(role, pid, env), unit)
    return pid


def _stop(settings: StackSettings, role: str, pid: int, index: int = 1) -> str:
    unit = unit_name(role, index)
    said = terminate(pid, unit, STOP_TIMEOUT_S)
    (services_folder(settings) / f"{unit}.pid").unlink(missing_ok=True)
    remove_record(services_folder(settings), unit)
    crashes_path(services_folder(settings), unit).unlink(missing_ok=True)
    return said


def _start_one(settings: StackSettings, role: str, index: int, env: Mapping[str, str]) -> list[str]:
    """Start one replica if it does not run, restart it if its settings changed."""
    folder, unit = services_folder(settings), unit_name(role, index)
    pid, notes = unit_pid(settings, role, index)
    if pid is None:
        return [*notes, f"started {unit} (pid {launch_unit(settings, role, env, index)})"]
    record = read_record(folder, role, pid, unit)
    if record is None:
        return [
            *notes,
            f"{unit} (pid {pid}) runs with settings unknown to this version (no record"
            f" of them); to apply the current ones run: tracebound restart {role}",
        ]
    changes = record.changes(replica_env(role, index, env))
    if not changes:
        return notes
    _stop(settings, role, pid, index)
    new = launch_unit(settings, role, env, index)
    return [*notes, f"restarted {unit}: {', '.join(changes)} (pid {pid} -> {new})"]


def start_services(
    settings: StackSettings,
    env: Mapping[str, str],
    roles: tuple[str, ...] = tuple(ROLE_INPUTS),
    replicas: Mapping[str, int] | None = None,
) -> list[str]:
    """Start every role that is not running and restart those whose settings changed.

    ``env`` adds to this process's environment. ``replicas`` sets how many processes
    of a role run (extra ones are stopped); a role it does not name keeps the ones
    that run.
    """
    env = service_env(env)
    services_folder(settings).mkdir(parents=True, exist_ok=True)
    messages: list[str] = []
    for role in roles:
        wanted = (replicas or {}).get(role)
        for index in _units(settings, role, wanted):
            messages += _start_one(settings, role, index, env)
        if wanted is not None:
            messages += stop_services(settings, (role,), keep=wanted)
    return messages


def restart_services(
    settings: StackSettings, env: Mapping[str, str], roles: tuple[str, ...]
) -> list[str]:
    """Stop ``roles`` that run and start them all again; ``env`` as for ``start_services``."""
    env = service_env(env)
    services_folder(settings).mkdir(parents=True, exist_ok=True)
    messages: list[str] = []
    for role in roles:
        for index in _units(settings, role):
            unit = unit_name(role, index)
            pid, notes = unit_pid(settings, role, index)
            messages += notes
            if pid is None:
                new = launch_unit(settings, role, env, index)
                messages.append(f"started {unit} (pid {new}; it was not running)")
            else:
                _stop(settings, role, pid, index)
                new = launch_unit(settings, role, env, index)
                messages.append(f"restarted {unit} (pid {pid} -> {new})")
    return messages


def stop_services(
    settings: StackSettings, roles: tuple[str, ...] = tuple(ROLE_INPUTS), keep: int = 0
) -> list[str]:
    """Stop every replica of ``roles`` past the first ``keep``; forget one that is down but
    wanted (the keeper would start it again), so a stopped role stays stopped."""
    messages: list[str] = []
    folder = services_folder(settings)
    for role in roles:
        for index in _units(settings, role):
            if index <= keep:
                continue
            pid, notes = unit_pid(settings, role, index)
            messages += notes
            unit = unit_name(role, index)
            if pid is not None:
                messages.append(_stop(settings, role, pid, index))
            elif record_path(folder, unit).exists():
                remove_record(folder, unit)
                crashes_path(folder, unit).unlink(missing_ok=True)
                messages.append(f"{unit} was down; no longer kept running")
    return messages


def service_states(
    settings: StackSettings, kafka: KafkaSettings | None, env: Mapping[str, str] | None = None
) -> list[ServiceState]:
    """Each replica of each role: whether it runs, its group's lag (with ``kafka``), and
    what it was started with. With ``env`` (as for ``start_services``), also which of its
    settings differ."""
    current = service_env(env) if env is not None else None
    states = []
    for role, inputs in ROLE_INPUTS.items():
        known = kafka is not None and role not in CHECKPOINTED_ROLES
        lag = group_lag(kafka, role, inputs) if known and kafka is not None else None
        for index in _units(settings, role):
            unit = unit_name(role, index)
            pid, _ = unit_pid(settings, role, index)
            log = str(services_folder(settings) / f"{unit}.log")
            record = (
                read_record(services_folder(settings), role, pid, unit) if pid is not None else None
            )
            changes = (
                tuple(record.changes(replica_env(role, index, current)))
                if record and current is not None
                else ()
            )
            wanted = record_path(services_folder(settings), unit).exists()
            progress = (
                read_progress(settings.state_dir.expanduser().absolute(), pid) if pid else None
            )
            crashes = read_crashes(services_folder(settings), unit) if wanted else None
            states.append(
                ServiceState(
                    unit, pid is not None, pid, log, lag, record, changes, wanted, progress, crashes
                )
            )
    return states


def keeper_pid(settings: StackSettings) -> int | None:
    pid, _ = owned_pid(
        services_folder(settings) / "keeper.pid", _marker(settings), KEEPER, "keeper"
    )
    return pid


def start_keeper(settings: StackSettings, env: Mapping[str, str]) -> str:
    """(Re)start the keeper with ``env``, the environment the roles were started with."""
    said = stop_keeper(settings)
    argv = [sys.executable, "-X", _marker(settings), "-m", KEEPER]
    pid = spawn_detached(argv, services_folder(settings) / "keeper.log", service_env(env))
    write_pid(services_folder(settings) / "keeper.pid", pid)
    started = f"keeper started (pid {pid})"
    return f"{said}; {started}" if said else started


def stop_keeper(settings: StackSettings) -> str:
    pid = keeper_pid(settings)
    if pid is None:
        return ""
    said = terminate(pid, "keeper", STOP_TIMEOUT_S)
    (services_folder(settings) / "keeper.pid").unlink(missing_ok=True)
    return said
