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
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tracebound import resources
from tracebound.cli import load_settings_classes
from tracebound.errors import InvalidInputError
from tracebound.settings import KafkaSettings, StackSettings, settings_classes
from tracebound.stack.lag import Lag, group_lag
from tracebound.stack.process import owned_pid, spawn_detached, terminate, write_pid
from tracebound.stack.service_env import EnvRecord, read_record, remove_record, write_record
from tracebound.topology import ROLES

# Each role's input topics (its consumer group's), in start order; from the topology.
ROLE_INPUTS: dict[str, tuple[str, ...]] = {role.name: role.input_topics for role in ROLES}
# The module a role runs as, when it is not ``services.<role>``.
ROLE_MODULES: dict[str, str] = {"projections": "projections"}
# Roles whose progress is a checkpoint in PostgreSQL, not a Kafka consumer group's
# committed offsets: Kafka cannot tell their lag, so status shows none for them
# (``tracebound projections status`` shows checkpoints against end offsets).
CHECKPOINTED_ROLES = frozenset({"projections"})
STOP_TIMEOUT_S = 30.0


@dataclass(frozen=True, slots=True)
class ServiceState:
    name: str
    running: bool
    pid: int | None
    log: str
    lag: Lag | None
    record: EnvRecord | None = None  # what it was started with, if known
    changes: tuple[str, ...] = ()  # its settings that differ from the current ones

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


def _folder(settings: StackSettings) -> Path:
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


def _pid(settings: StackSettings, role: str) -> tuple[int | None, list[str]]:
    pid_file = _folder(settings) / f"{role}.pid"
    return owned_pid(pid_file, _marker(settings), role_module(role), role, adopt=False)


def _launch(settings: StackSettings, role: str, env: Mapping[str, str]) -> int:
    folder = _folder(settings)
    argv = [sys.executable, "-X", _marker(settings), "-m", role_module(role)]
    pid = spawn_detached(argv, folder / f"{role}.log", env)
    write_pid(folder / f"{role}.pid", pid)
    write_record(folder, EnvRecord.of(role, pid, env))
    return pid


def _stop(settings: StackSettings, role: str, pid: int) -> str:
    said = terminate(pid, role, STOP_TIMEOUT_S)
    (_folder(settings) / f"{role}.pid").unlink(missing_ok=True)
    remove_record(_folder(settings), role)
    return said


def start_services(
    settings: StackSettings, env: Mapping[str, str], roles: tuple[str, ...] = tuple(ROLE_INPUTS)
) -> list[str]:
    """Start every role that is not running and restart those whose settings changed.

    ``env`` adds to this process's environment.
    """
    env = service_env(env)
    folder = _folder(settings)
    folder.mkdir(parents=True, exist_ok=True)
    messages: list[str] = []
    for role in roles:
        pid, notes = _pid(settings, role)
        messages += notes
        if pid is None:
            messages.append(f"started {role} (pid {_launch(settings, role, env)})")
            continue
        record = read_record(folder, role, pid)
        if record is None:
            messages.append(
                f"{role} (pid {pid}) runs with settings unknown to this version (no record"
                f" of them); to apply the current ones run: tracebound restart {role}"
            )
            continue
        changes = record.changes(env)
        if changes:
            _stop(settings, role, pid)
            new = _launch(settings, role, env)
            messages.append(f"restarted {role}: {', '.join(changes)} (pid {pid} -> {new})")
    return messages


def restart_services(
    settings: StackSettings, env: Mapping[str, str], roles: tuple[str, ...]
) -> list[str]:
    """Stop ``roles`` that run and start them all again; ``env`` as for ``start_services``."""
    env = service_env(env)
    _folder(settings).mkdir(parents=True, exist_ok=True)
    messages: list[str] = []
    for role in roles:
        pid, notes = _pid(settings, role)
        messages += notes
        if pid is None:
            new = _launch(settings, role, env)
            messages.append(f"started {role} (pid {new}; it was not running)")
        else:
            _stop(settings, role, pid)
            messages.append(f"restarted {role} (pid {pid} -> {_launch(settings, role, env)})")
    return messages


def stop_services(
    settings: StackSettings, roles: tuple[str, ...] = tuple(ROLE_INPUTS)
) -> list[str]:
    messages: list[str] = []
    for role in roles:
        pid, notes = _pid(settings, role)
        messages += notes
        if pid is not None:
            messages.append(_stop(settings, role, pid))
    return messages


def service_states(
    settings: StackSettings, kafka: KafkaSettings | None, env: Mapping[str, str] | None = None
) -> list[ServiceState]:
    """Each role: whether it runs, its lag (with ``kafka``), and what it was started with.

    With ``env`` (as for ``start_services``), also which of its settings differ.
    """
    current = service_env(env) if env is not None else None
    states = []
    for role, inputs in ROLE_INPUTS.items():
        pid, _ = _pid(settings, role)
        known = kafka is not None and role not in CHECKPOINTED_ROLES
        lag = group_lag(kafka, role, inputs) if known and kafka is not None else None
        log = str(_folder(settings) / f"{role}.log")
        record = read_record(_folder(settings), role, pid) if pid is not None else None
        changes = tuple(record.changes(current)) if record and current is not None else ()
        states.append(ServiceState(role, pid is not None, pid, log, lag, record, changes))
    return states
