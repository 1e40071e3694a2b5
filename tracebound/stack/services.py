"""The pipeline's role processes as part of the local stack.

``tracebound up`` starts one process per role (``python -m services.<role>``, or the
module named in ``ROLE_MODULES``: the read-model projections run as ``projections``) in
its own session, with its log and pid file in ``<state>/services``; ``down``
stops them with SIGTERM (each finishes or aborts its open transaction) before it
stops the broker. The state folder is passed as a ``-X`` option that Python
ignores, so a pid is recognised as ours only if its command line names this
very state folder.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import KafkaException, TopicPartition

from tracebound import kafka as edge
from tracebound import resources
from tracebound.settings import KafkaSettings, StackSettings
from tracebound.stack.process import owned_pid, spawn_detached, terminate, write_pid
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
    lag: int | None


def _folder(settings: StackSettings) -> Path:
    return settings.state_dir.expanduser().absolute() / "services"


def _marker(settings: StackSettings) -> str:
    return f"tracebound.state={settings.state_dir.expanduser().absolute()}"


def role_module(role: str) -> str:
    return ROLE_MODULES.get(role, f"services.{role}")


def _pid(settings: StackSettings, role: str) -> tuple[int | None, list[str]]:
    pid_file = _folder(settings) / f"{role}.pid"
    return owned_pid(pid_file, _marker(settings), role_module(role), role, adopt=False)


def start_services(
    settings: StackSettings, env: Mapping[str, str], roles: tuple[str, ...] = tuple(ROLE_INPUTS)
) -> list[str]:
    """Start every role that is not running; ``env`` adds to this process's environment."""
    folder = _folder(settings)
    folder.mkdir(parents=True, exist_ok=True)
    messages: list[str] = []
    # Few malloc arenas: the services are threaded (librdkafka, the projection workers)
    # and glibc's default of 8 per core keeps freed memory resident.
    # ``PYTHONPATH`` names the application folders, so ``-m services.<role>`` runs
    # from any working directory, in a checkout and in an installed wheel alike.
    full_env = resources.child_env({"MALLOC_ARENA_MAX": "2", **os.environ, **env})
    for role in roles:
        pid, notes = _pid(settings, role)
        messages += notes
        if pid is not None:
            continue
        argv = [sys.executable, "-X", _marker(settings), "-m", role_module(role)]
        new = spawn_detached(argv, folder / f"{role}.log", full_env)
        write_pid(folder / f"{role}.pid", new)
        messages.append(f"started {role} (pid {new})")
    return messages


def stop_services(
    settings: StackSettings, roles: tuple[str, ...] = tuple(ROLE_INPUTS)
) -> list[str]:
    messages: list[str] = []
    for role in roles:
        pid, notes = _pid(settings, role)
        messages += notes
        if pid is not None:
            messages.append(terminate(pid, role, STOP_TIMEOUT_S))
            (_folder(settings) / f"{role}.pid").unlink(missing_ok=True)
    return messages


def group_lag(kafka: KafkaSettings, group: str, topic_names: tuple[str, ...]) -> int | None:
    """Messages the group has not committed yet over its input topics; None if unknown.

    A service without input topics (the ingest) cannot fall behind: its lag is 0.
    """
    if not topic_names:
        return 0
    consumer = edge.consumer(kafka, "status", group=group)  # asks, never joins
    try:
        marks = edge.watermarks(consumer, edge.partitions(consumer, topic_names))
        total = 0
        for tp in consumer.committed([TopicPartition(*key) for key in marks], timeout=5):
            low, high = marks[(tp.topic, tp.partition)]
            total += max(high - (tp.offset if tp.offset >= 0 else low), 0)
        return total
    except KafkaException:
        return None
    finally:
        consumer.close()


def service_states(settings: StackSettings, kafka: KafkaSettings | None) -> list[ServiceState]:
    states = []
    for role, inputs in ROLE_INPUTS.items():
        pid, _ = _pid(settings, role)
        known = kafka is not None and role not in CHECKPOINTED_ROLES
        lag = group_lag(kafka, role, inputs) if known and kafka is not None else None
        log = str(_folder(settings) / f"{role}.log")
        states.append(ServiceState(role, pid is not None, pid, log, lag))
    return states
