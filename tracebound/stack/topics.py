"""Creating and inspecting the topics of ``schemas/topics.json`` on a broker.

Brokers run with ``auto.create.topics.enable=false``, so topics exist only because this
module made them, with the partition count and per-topic config the table asks for.
Creation is idempotent (an existing topic is fine) and returns only once every new
partition has a leader, so a producer that starts right after ``up`` never races the
controller. ``ensure_topics`` is also what tests use to make throw-away topics.

For a broker started some other way, run ``python -m tracebound.stack.topics`` (the
``topics`` service of ``compose/docker-compose.yml`` does); it connects with
``TRACEBOUND_KAFKA_*`` settings.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Iterable, Mapping
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from tracebound.errors import StackError
from tracebound.settings import KafkaSettings, StackSettings
from tracebound.stack import nodes
from tracebound.topics import topic_configs

log = logging.getLogger(__name__)

TopicConfigs = Mapping[str, Mapping[str, str]] | Iterable[tuple[str, Mapping[str, str]]]

_RETRY_CODES = frozenset(
    {
        KafkaError.INVALID_REPLICATION_FACTOR,  # broker not registered with the controller yet
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError._TIMED_OUT,
        KafkaError._TRANSPORT,
    }
)


def quiet_admin_config(bootstrap: str, base: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Admin client config whose librdkafka chatter goes to ``logging``, not to stderr.

    While a broker is still starting, librdkafka reports every refused connection;
    those lines belong in debug logs, not in the output of ``tracebound up``.
    """
    conf: dict[str, Any] = dict(base or {})
    conf["bootstrap.servers"] = bootstrap
    conf["logger"] = log
    return conf


def partitions_and_leaders(
    admin: AdminClient, timeout_s: float = 10.0
) -> dict[str, tuple[int, int]]:
    """Topic name → (partitions, partitions whose leader is known), for every topic."""
    metadata = admin.list_topics(timeout=timeout_s)
    return {
        name: (len(topic.partitions), sum(1 for p in topic.partitions.values() if p.leader >= 0))
        for name, topic in metadata.topics.items()
        if topic.error is None
    }


def _normalise(names_and_configs: TopicConfigs) -> dict[str, dict[str, str]]:
    items = (
        names_and_configs.items() if isinstance(names_and_configs, Mapping) else names_and_configs
    )
    return {name: dict(config) for name, config in items}


def ensure_topics(
    kafka_settings: KafkaSettings,
    names_and_configs: TopicConfigs,
    partitions: int,
    *,
    replication_factor: int = 1,
    timeout_s: float = 60.0,
) -> list[str]:
    """Create the missing topics and wait for their leaders; return the names created.

    ``names_and_configs`` maps each topic name to its topic-level config (or is a
    sequence of ``(name, config)`` pairs). Topics that already exist are left as they
    are, whatever their partition count.
    """
    wanted = _normalise(names_and_configs)
    bootstrap = kafka_settings.client_config()["bootstrap.servers"]
    admin = AdminClient(quiet_admin_config(bootstrap, kafka_settings.client_config()))
    deadline = time.monotonic() + timeout_s
    created: list[str] = []
    last_error = "timed out"
    while True:
        try:
            existing = partitions_and_leaders(
                admin, max(1.0, min(10.0, deadline - time.monotonic()))
            )
        except KafkaException as exc:
            existing, last_error = None, str(exc.args[0])
        if existing is not None:
            missing = [name for name in wanted if name not in existing]
            if not missing and all(0 < existing[n][1] == existing[n][0] for n in wanted):
                return created
            if missing:
                last_error = _create(
                    admin,
                    missing,
                    wanted=wanted,
                    partitions=partitions,
                    replication_factor=replication_factor,
                    created=created,
                )
        if time.monotonic() >= deadline:
            raise StackError(
                f"topics not ready on {bootstrap} within {timeout_s:.0f}s: {last_error}"
            )
        time.sleep(0.3)


def _create(
    admin: AdminClient,
    names: list[str],
    *,
    wanted: dict[str, dict[str, str]],
    partitions: int,
    replication_factor: int,
    created: list[str],
) -> str:
    """One create_topics round; fatal errors raise, retriable ones are returned as text."""
    new = [
        NewTopic(
            n, num_partitions=partitions, replication_factor=replication_factor, config=wanted[n]
        )
        for n in names
    ]
    retry = ""
    for name, future in admin.create_topics(new, request_timeout=15.0).items():
        try:
            future.result()
            created.append(name)
        except KafkaException as exc:
            err: KafkaError = exc.args[0]
            if err.code() == KafkaError.TOPIC_ALREADY_EXISTS:
                continue
            if err.retriable() or err.code() in _RETRY_CODES:
                retry = f"{name}: {err.str()}"
                continue
            raise StackError(f"cannot create topic {name}: {err.str()}") from exc
    return retry or "waiting for partition leaders"


def stack_kafka_settings(settings: StackSettings) -> KafkaSettings:
    """Client settings pointing at the local stack's brokers, whatever the environment says."""
    return KafkaSettings(bootstrap_servers=nodes.bootstrap(settings))


def create_stack_topics(settings: StackSettings) -> list[str]:
    """Create every topic of the topic table on the local stack; return notes.

    On a multi-broker stack every topic is replicated (three copies, two in sync)."""
    table = topic_configs()
    factor, _ = nodes.replication(nodes.broker_count(settings))
    created = ensure_topics(
        stack_kafka_settings(settings), table, settings.partitions, replication_factor=factor
    )
    if not created:
        return []
    return [
        f"created {len(created)} topic(s) with {settings.partitions} partition(s) each"
        f" and replication factor {factor}"
    ]


def topic_states(settings: StackSettings, timeout_s: float = 10.0) -> dict[str, int | None]:
    """Topic name → partition count (None when missing) for every topic in the table."""
    bootstrap = nodes.bootstrap(settings)
    admin = AdminClient(quiet_admin_config(bootstrap))
    try:
        counts = partitions_and_leaders(admin, timeout_s)
    except KafkaException as exc:
        raise StackError(f"cannot read topic metadata from {bootstrap}: {exc.args[0]}") from exc
    return {name: counts[name][0] if name in counts else None for name in topic_configs()}


def main() -> int:
    """Create the topic table on the broker named by ``TRACEBOUND_KAFKA_*`` settings."""
    kafka = KafkaSettings()
    table = topic_configs()
    try:
        created = ensure_topics(kafka, table, StackSettings().partitions)
    except StackError as exc:
        print(f"tracebound: {exc}", file=sys.stderr)
        return 1
    print(f"{len(created)} topic(s) created, {len(table) - len(created)} already present")
    return 0


if __name__ == "__main__":
    sys.exit(main())
