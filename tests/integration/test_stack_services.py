"""Services of the stack on the real broker: settings that change take effect, and lag.

The services run in a private state folder against the session's broker and
database (two roles only, to stay cheap), through the same ``start_services`` that
``tracebound up`` calls, and are stopped at the end so later tests own the groups.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import TopicPartition

from tests.support.stack import StackHandle
from tracebound import kafka as edge
from tracebound.settings import StackSettings
from tracebound.stack.lag import Lag, group_lag
from tracebound.stack.services import (
    restart_services,
    service_states,
    start_services,
    stop_services,
)

ROLES = ("executor", "gatekeeper")
BACKEND = "TRACEBOUND_TOOLS_METRICS_BACKEND"


@pytest.fixture
def services(stack: StackHandle, tmp_path: Path) -> Iterator[StackSettings]:
    settings = StackSettings(state_dir=tmp_path / "state")
    try:
        yield settings
    finally:
        stop_services(settings, ROLES)


def _pids(settings: StackSettings) -> dict[str, int | None]:
    return {s.name: s.pid for s in service_states(settings, None) if s.name in ROLES}


def test_up_restarts_exactly_the_role_whose_settings_changed_and_restart_restarts(
    stack: StackHandle, services: StackSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(BACKEND, raising=False)
    base = {
        "TRACEBOUND_KAFKA_BOOTSTRAP_SERVERS": stack.bootstrap,
        "TRACEBOUND_PG_DSN": stack.pg_dsn,
        "TRACEBOUND_GATEKEEPER_BATCH_SIZE": "100",
    }
    first = start_services(services, base, ROLES)
    assert [m.split(" (")[0] for m in first] == ["started executor", "started gatekeeper"]
    before = _pids(services)
    assert None not in before.values()
    assert start_services(services, base, ROLES) == []  # nothing changed: untouched

    changed = {**base, BACKEND: "demo"}
    messages = start_services(services, changed, ROLES)
    after = _pids(services)
    assert messages == [
        f"restarted executor: {BACKEND} set (pid {before['executor']} -> {after['executor']})"
    ]
    assert after["executor"] not in (None, before["executor"])
    assert after["gatekeeper"] == before["gatekeeper"]

    states = {s.name: s for s in service_states(services, stack.kafka, changed)}
    executor = states["executor"]
    assert executor.running and executor.settings == "current"
    assert executor.mode == "rules"
    assert executor.backends["metrics"] == "demo"
    assert states["gatekeeper"].mode is None and states["gatekeeper"].backends == {}
    # Changing only the gatekeeper's variable is seen as a change of the gatekeeper's.
    later = {
        s.name: s
        for s in service_states(
            services, None, {**changed, "TRACEBOUND_GATEKEEPER_BATCH_SIZE": "7"}
        )
    }
    assert later["gatekeeper"].changes == ("TRACEBOUND_GATEKEEPER_BATCH_SIZE changed",)
    assert later["executor"].changes == ()

    said = restart_services(services, changed, ("gatekeeper",))
    final = _pids(services)
    assert said == [f"restarted gatekeeper (pid {after['gatekeeper']} -> {final['gatekeeper']})"]
    assert final["gatekeeper"] not in (None, after["gatekeeper"])
    assert final["executor"] == after["executor"]


def _transaction(producer: object, topic: str, records: int, *, commit: bool = True) -> None:
    producer.begin_transaction()  # type: ignore[attr-defined]
    for i in range(records):
        producer.produce(topic, value=f"r{i}".encode(), partition=0)  # type: ignore[attr-defined]
    if commit:
        producer.commit_transaction(10)  # type: ignore[attr-defined]
    else:
        producer.abort_transaction(10)  # type: ignore[attr-defined]


def test_lag_counts_unread_records_not_transaction_markers(stack: StackHandle) -> None:
    topic = stack.topic("lag", partitions=1)
    group = f"test-lag-{uuid.uuid4().hex[:8]}"
    producer = edge.transactional_producer(stack.kafka, f"test-lag-{uuid.uuid4().hex}", 10_000)
    producer.init_transactions(10)
    _transaction(producer, topic, 3)
    _transaction(producer, topic, 2)
    assert group_lag(stack.kafka, group, (topic,)) == Lag(5, exact=True)  # nothing committed

    consumer = edge.consumer(stack.kafka, "test-lag", group=group)
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        read: list[int] = []
        while len(read) < 5:
            message = consumer.poll(10)
            assert message is not None, f"read only {read}"
            offset = message.offset()
            if message.error() is None and offset is not None:
                read.append(offset)
        consumer.commit(offsets=[TopicPartition(topic, 0, read[-1] + 1)], asynchronous=False)
        _, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    finally:
        consumer.close()
    assert high - (read[-1] + 1) >= 1  # the marker after the last record takes an offset
    assert group_lag(stack.kafka, group, (topic,)) == Lag(0, exact=True)

    _transaction(producer, topic, 4)
    _transaction(producer, topic, 6, commit=False)  # aborted output is no input
    _transaction(producer, topic, 1)
    producer.flush(10)
    assert group_lag(stack.kafka, group, (topic,)) == Lag(5, exact=True)
