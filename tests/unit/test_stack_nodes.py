"""The local stack's multi-broker layout and role replicas, without starting anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from tracebound.errors import InvalidInputError, StackError
from tracebound.settings import StackSettings
from tracebound.stack import kafka, nodes
from tracebound.stack.services import parse_replicas, replica_env, unit_name


def _settings(tmp_path: Path, brokers: int | None) -> StackSettings:
    return StackSettings(
        state_dir=tmp_path / "state",
        cache_dir=tmp_path / "cache",
        kafka_port=29092,
        controller_port=29093,
        partitions=6,
        brokers=brokers,
    )


def _props(settings: StackSettings, node: nodes.Node, count: int) -> dict[str, str]:
    kafka.write_config(settings, node.paths, node.node_id, count)
    text = node.paths.kafka_config.read_text(encoding="utf-8")
    return dict(
        line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#")
    )


def test_three_nodes_take_ports_two_apart_and_form_a_static_quorum(tmp_path: Path) -> None:
    settings = _settings(tmp_path, 3)
    cluster = nodes.nodes(settings)
    assert [n.address for n in cluster] == ["127.0.0.1:29092", "127.0.0.1:29094", "127.0.0.1:29096"]
    assert nodes.bootstrap(settings) == "127.0.0.1:29092,127.0.0.1:29094,127.0.0.1:29096"
    # Node 1 keeps the single broker's files; the others have folders of their own.
    assert cluster[0].paths.kafka_data == settings.state_dir.absolute() / "kafka" / "data"
    assert len({n.paths.kafka_data for n in cluster}) == 3
    props = _props(settings, cluster[2], 3)
    assert props["node.id"] == "3"
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:29096,CONTROLLER://127.0.0.1:29097"
    assert props["controller.quorum.voters"] == (
        "1@127.0.0.1:29093,2@127.0.0.1:29095,3@127.0.0.1:29097"
    )
    assert "controller.quorum.bootstrap.servers" not in props
    assert props["log.dirs"] == str(cluster[2].paths.kafka_data)
    for key in ("offsets.topic", "transaction.state.log", "default"):
        assert props[f"{key}.replication.factor"] == "3"
    assert props["transaction.state.log.min.isr"] == props["min.insync.replicas"] == "2"


def test_one_node_stays_a_standalone_quorum_with_replication_one(tmp_path: Path) -> None:
    settings = _settings(tmp_path, None)
    (only,) = nodes.nodes(settings)
    props = _props(settings, only, 1)
    assert props["controller.quorum.bootstrap.servers"] == "127.0.0.1:29093"
    assert props["default.replication.factor"] == props["min.insync.replicas"] == "1"
    assert nodes.replication(2) == (2, 1)


def test_a_state_folder_keeps_the_broker_count_it_was_started_with(tmp_path: Path) -> None:
    assert nodes.record_count(_settings(tmp_path, 3)) == 3
    assert nodes.broker_count(_settings(tmp_path, None)) == 3  # found again without --brokers
    with pytest.raises(StackError, match="holds a 3-broker cluster, not 1"):
        nodes.broker_count(_settings(tmp_path, 1))


def test_replicas_are_asked_for_all_roles_or_one_and_only_for_group_members() -> None:
    wanted = parse_replicas(["2", "executor=3"])
    assert wanted == {
        "planner": 2,
        "executor": 3,
        "gatekeeper": 2,
        "verifier": 2,
        "composer": 2,
        "sentinel": 2,
    }
    assert parse_replicas(["sentinel=2"]) == {"sentinel": 2}
    assert parse_replicas(["projections=3"]) == {"projections": 3}
    for bad in ("ingest=2", "0", "executor=x", "10"):
        with pytest.raises(InvalidInputError):
            parse_replicas([bad])


def test_each_replica_past_the_first_has_a_unit_and_replica_id_of_its_own() -> None:
    env = {"TRACEBOUND_EXECUTOR_REPLICA_ID": "node-a"}
    assert unit_name("executor", 1) == "executor"
    assert replica_env("executor", 1, env) is env
    assert unit_name("executor", 3) == "executor-3"
    assert replica_env("executor", 3, env)["TRACEBOUND_EXECUTOR_REPLICA_ID"] == "node-a-3"
    assert replica_env("planner", 2, {})["TRACEBOUND_PLANNER_REPLICA_ID"].endswith("-2")
