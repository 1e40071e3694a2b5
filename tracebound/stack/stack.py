"""Orchestration of the local stack and the status model the CLI and tests read.

``up`` and ``down`` take a lock on the state folder so two terminals (or a test
session and a terminal) never start two brokers on one data folder. Both are
idempotent: ``up`` on a running stack only re-checks it, ``down`` on a stopped one
does nothing — except that ``up`` restarts a service whose settings changed since
it started (see :mod:`tracebound.stack.services`). A component counts as running
only if its pid file names a live process of ours *and* its port accepts
connections.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from tracebound.errors import StackError
from tracebound.settings import KafkaSettings, StackSettings
from tracebound.stack import kafka, nodes, postgres
from tracebound.stack.paths import StackPaths
from tracebound.stack.process import port_answers, state_lock
from tracebound.stack.services import (
    ServiceState,
    restart_services,
    service_states,
    start_keeper,
    start_services,
    stop_keeper,
    stop_services,
)
from tracebound.stack.topics import create_stack_topics, topic_states
from tracebound.topics import topic_configs


@dataclass(frozen=True, slots=True)
class ComponentStatus:
    name: str
    running: bool
    pid: int | None
    address: str
    data_dir: str

    @property
    def state(self) -> str:
        return "running" if self.running else "stopped"


@dataclass(frozen=True, slots=True)
class TopicStatus:
    name: str
    partitions: int | None
    broker_answered: bool

    @property
    def state(self) -> str:
        """``present``, ``missing``, or ``unknown`` when the broker could not be asked."""
        if self.partitions is not None:
            return "present"
        return "missing" if self.broker_answered else "unknown"


@dataclass(frozen=True, slots=True)
class StackStatus:
    kafka_bootstrap: str
    pg_dsn: str
    kafka: ComponentStatus
    postgres: ComponentStatus
    topics: tuple[TopicStatus, ...]
    messages: tuple[str, ...] = ()
    started: tuple[str, ...] = ()  # components this call had to start
    services: tuple[ServiceState, ...] = ()
    more_brokers: tuple[ComponentStatus, ...] = ()  # nodes 2… of a multi-broker stack

    @property
    def components(self) -> tuple[ComponentStatus, ...]:
        return (self.kafka, *self.more_brokers, self.postgres)

    @property
    def healthy(self) -> bool:
        """Everything runs, every topic of the table exists, and no service that ``up``
        started is down or stuck."""
        return (
            all(c.running for c in self.components)
            and all(t.state == "present" for t in self.topics)
            and all(v.healthy for v in self.services)
        )

    @property
    def problems(self) -> list[str]:
        """What keeps the stack from being healthy, one line each."""
        found = [f"{c.name} is not running" for c in self.components if not c.running]
        found += [f"topic {t.name} is {t.state}" for t in self.topics if t.state != "present"]
        return found + [v.problem for v in self.services if not v.healthy]

    def to_dict(self) -> dict[str, Any]:
        return {
            "healthy": self.healthy,
            "kafka_bootstrap": self.kafka_bootstrap,
            "pg_dsn": self.pg_dsn,
            "components": [
                {
                    "name": c.name,
                    "state": c.state,
                    "pid": c.pid,
                    "address": c.address,
                    "data_dir": c.data_dir,
                }
                for c in self.components
            ],
            "topics": [
                {"name": t.name, "state": t.state, "partitions": t.partitions} for t in self.topics
            ],
            "services": [
                {
                    "name": v.name,
                    "state": v.state,
                    "problem": v.problem or None,
                    "pid": v.pid,
                    "progress": v.progress.to_json() if v.progress is not None else None,
                    "restarts": (v.crashes or {}).get("restarts", 0),
                    "last_crash": (v.crashes or {}).get("last_reason"),
                    "lag": v.lag.records if v.lag is not None else None,
                    "lag_exact": v.lag.exact if v.lag is not None else None,
                    "mode": v.mode,
                    "backends": v.backends,
                    "settings": v.settings,
                    "changed": list(v.changes),
                    "log": v.log,
                }
                for v in self.services
            ],
            "problems": self.problems,
            "messages": list(self.messages),
            "started": list(self.started),
        }


def _services_env(settings: StackSettings) -> dict[str, str]:
    """What the services' environment adds to this one's: the way to this stack."""
    return {
        "TRACEBOUND_KAFKA_BOOTSTRAP_SERVERS": kafka.bootstrap(settings),
        "TRACEBOUND_PG_DSN": postgres.dsn(settings),
    }


def _servers(
    settings: StackSettings, messages: list[str]
) -> tuple[list[ComponentStatus], ComponentStatus]:
    """Each Kafka node and the database server: pid, and whether it runs and answers."""
    paths = StackPaths.from_settings(settings)
    brokers = []
    for node in nodes.nodes(settings):
        pid, notes = kafka.node_pid(node)
        messages += notes
        up = pid is not None and port_answers(node.settings.host, node.settings.kafka_port)
        brokers.append(
            ComponentStatus(node.name, up, pid, node.address, str(node.paths.kafka_data))
        )
    pg_pid, notes = postgres.server_pid(settings)
    messages += notes
    pg_up = pg_pid is not None and port_answers(settings.host, settings.pg_port)
    pg = ComponentStatus(
        "postgres", pg_up, pg_pid, f"{settings.host}:{settings.pg_port}", str(paths.pg_data)
    )
    return brokers, pg


def status(settings: StackSettings | None = None) -> StackStatus:
    """Inspect the stack without changing it (apart from removing stale pid files)."""
    settings = settings or StackSettings()
    messages: list[str] = []
    brokers, pg = _servers(settings, messages)
    kafka_up = any(b.running for b in brokers)
    counts: dict[str, int | None] = dict.fromkeys(topic_configs())
    answered = False
    if kafka_up:
        try:
            counts, answered = topic_states(settings), True
        except StackError as exc:
            messages.append(str(exc))
    return StackStatus(
        kafka_bootstrap=kafka.bootstrap(settings),
        pg_dsn=postgres.dsn(settings),
        kafka=brokers[0],
        more_brokers=tuple(brokers[1:]),
        postgres=pg,
        topics=tuple(TopicStatus(name, n, answered) for name, n in counts.items()),
        messages=tuple(messages),
        services=tuple(
            service_states(
                settings,
                KafkaSettings(bootstrap_servers=kafka.bootstrap(settings)) if kafka_up else None,
                _services_env(settings),
            )
        ),
    )


def up(
    settings: StackSettings | None = None,
    *,
    services: bool = False,
    env: Mapping[str, str] | None = None,
    replicas: Mapping[str, int] | None = None,
) -> StackStatus:
    """Start whatever is not running yet, create missing topics, return the new status.

    With ``services`` the pipeline's role processes start too, wired to this stack,
    and a running one whose settings changed since it started is restarted; ``env``
    adds settings of theirs (``tracebound demo`` selects the demo tools); ``replicas``
    sets how many processes of a role run.
    """
    settings = settings or StackSettings()
    paths = StackPaths.from_settings(settings)
    messages: list[str] = []
    started: list[str] = []
    with state_lock(paths.lock_file):
        nodes.broker_count(settings)  # refuses another size than the folder holds
        kafka_before, notes = kafka.broker_pids(settings)
        messages += notes
        pg_before, notes = postgres.server_pid(settings)
        messages += notes
        # Check every port before starting anything, so a conflict leaves nothing half-up.
        kafka.check_ports(settings)
        if pg_before is None:
            postgres.check_port(settings)
        messages += kafka.start_broker(settings)
        if kafka.broker_pids(settings)[0] != kafka_before:
            started.append("kafka")
        messages += postgres.start_server(settings)
        if postgres.server_pid(settings)[0] != pg_before:
            started.append("postgres")
        messages += create_stack_topics(settings)
        if services:
            services_env = {**_services_env(settings), **(env or {})}
            launched = start_services(settings, services_env, replicas=replicas)
            messages += launched
            if any(m.startswith(("started", "restarted")) for m in launched):
                started.append("services")
            messages.append(start_keeper(settings, services_env))
        now = status(settings)
    return replace(now, messages=(*messages, *now.messages), started=tuple(started))


def restart(settings: StackSettings, roles: tuple[str, ...]) -> StackStatus:
    """Stop and start ``roles`` with the current settings; the stack must be up."""
    paths = StackPaths.from_settings(settings)
    messages: list[str] = []
    with state_lock(paths.lock_file):
        brokers, pg = _servers(settings, messages)
        if not all(c.running for c in (*brokers, pg)):
            raise StackError("the stack is not running; start it with: tracebound up")
        messages += restart_services(settings, _services_env(settings), roles)
        now = status(settings)
    return replace(now, messages=(*messages, *now.messages), started=("services",))


def pause(settings: StackSettings, roles: tuple[str, ...]) -> list[str]:
    """Stop ``roles`` for a while (another harness runs its own), holding the state lock,
    so the keeper never sees one half-stopped and starts it behind this call's back."""
    with state_lock(StackPaths.from_settings(settings).lock_file):
        return stop_services(settings, roles)


def resume(settings: StackSettings, env: Mapping[str, str], roles: tuple[str, ...]) -> list[str]:
    """Start the ``roles`` a :func:`pause` stopped, holding the state lock."""
    with state_lock(StackPaths.from_settings(settings).lock_file):
        return start_services(settings, env, roles)


def down(settings: StackSettings | None = None, purge: bool = False) -> StackStatus:
    """Stop what ``up`` started; with ``purge`` also delete the Kafka and PostgreSQL data."""
    settings = settings or StackSettings()
    paths = StackPaths.from_settings(settings)
    messages: list[str] = []
    with state_lock(paths.lock_file):
        if said := stop_keeper(settings):
            messages.append(said)
        messages += stop_services(settings)
        messages += kafka.stop_broker(settings)
        messages += postgres.stop_server(settings)
        if not any(m.startswith(("stopped", "killed")) for m in messages):
            messages.append("nothing was running")
        if purge:
            for folder in (paths.kafka_dir, paths.pg_dir):
                if folder.exists():
                    shutil.rmtree(folder)
                    messages.append(f"deleted {folder}")
        now = status(settings)
    return replace(now, messages=(*messages, *now.messages))
