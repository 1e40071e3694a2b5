"""The local stack on real servers: ``up`` starts everything, again is a no-op.

The stack is left running on purpose: the session fixture (or whoever started it)
owns stopping it, and the other integration tests run against it.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import uuid

import psycopg
import pytest
from confluent_kafka.admin import AdminClient

from tracebound.settings import KafkaSettings, StackSettings
from tracebound.stack import cli, stack
from tracebound.stack.topics import ensure_topics
from tracebound.topics import ALERTS, topic_configs


@pytest.fixture(scope="module")
def settings() -> StackSettings:
    if os.environ.get("TRACEBOUND_KAFKA_BOOTSTRAP_SERVERS"):
        pytest.skip("an external cluster is configured; the local stack is not in use")
    return StackSettings()


def test_up_starts_kafka_postgres_and_every_topic(settings: StackSettings) -> None:
    result = stack.up(settings)
    assert result.kafka.running and result.kafka.pid is not None, result.messages
    assert result.postgres.running and result.postgres.pid is not None, result.messages
    states = {t.name: t for t in result.topics}
    assert set(states) == set(topic_configs()) and ALERTS in states
    for topic in states.values():
        assert topic.state == "present", topic
        assert topic.partitions is not None and topic.partitions >= 1
    assert result.healthy

    current = stack.status(settings)
    assert current.healthy
    assert (current.kafka.pid, current.postgres.pid) == (result.kafka.pid, result.postgres.pid)

    with psycopg.connect(result.pg_dsn, connect_timeout=10) as conn:
        row = conn.execute("SELECT current_database(), current_user").fetchone()
    assert row == ("tracebound", "tracebound")


def test_up_again_is_a_no_op(settings: StackSettings) -> None:
    first = stack.up(settings)
    second = stack.up(settings)
    assert second.started == ()
    assert second.kafka.pid == first.kafka.pid
    assert second.postgres.pid == first.postgres.pid
    assert second.healthy


def test_status_json_reports_running_components(settings: StackSettings) -> None:
    stack.up(settings)
    parser = argparse.ArgumentParser()
    cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["status", "--json"])
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = args.handler(args)
    report = json.loads(out.getvalue())
    assert code == 0
    assert report["healthy"] is True
    assert {c["name"]: c["state"] for c in report["components"]} == {
        "kafka": "running",
        "postgres": "running",
    }
    assert all(t["state"] == "present" for t in report["topics"])


def test_ensure_topics_creates_ad_hoc_topics_once(settings: StackSettings) -> None:
    result = stack.up(settings)
    kafka_settings = KafkaSettings(bootstrap_servers=result.kafka_bootstrap)
    name = f"test.stack.{uuid.uuid4().hex[:8]}"
    try:
        assert ensure_topics(kafka_settings, {name: {"retention.ms": "60000"}}, 2) == [name]
        assert ensure_topics(kafka_settings, [(name, {})], 2) == []
        admin = AdminClient({"bootstrap.servers": result.kafka_bootstrap})
        assert len(admin.list_topics(timeout=10).topics[name].partitions) == 2
    finally:
        admin = AdminClient({"bootstrap.servers": result.kafka_bootstrap})
        for future in admin.delete_topics([name], operation_timeout=10).values():
            with contextlib.suppress(Exception):
                future.result()
