"""Replica identity: a stable default id, one live holder per id and cluster, fencing named."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, TopicPartition

from tracebound import kafka as edge
from tracebound.replica import ReplicaInUse, ReplicaLock, default_replica_id, replica_id_of
from tracebound.settings import RuntimeSettings


@pytest.fixture(autouse=True)
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    return tmp_path


def test_the_default_id_is_the_host_name_in_the_characters_ids_take() -> None:
    assert replica_id_of("Checkout-7d9f8b6c4-x2x9q") == "checkout-7d9f8b6c4-x2x9q"
    assert replica_id_of("my host.example.com") == "my-host.example.com"
    assert replica_id_of("  ") == "0"
    assert replica_id_of("x" * 300) == "x" * 100
    assert default_replica_id() == replica_id_of(__import__("socket").gethostname())


def test_settings_default_to_the_host_and_refuse_ids_kafka_would_choke_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert RuntimeSettings.for_service("planner").replica_id == default_replica_id()
    monkeypatch.setenv("TRACEBOUND_PLANNER_REPLICA_ID", "a/b")
    with pytest.raises(ValueError, match="replica_id"):
        RuntimeSettings.for_service("planner")


def test_a_second_holder_of_the_same_id_and_cluster_is_refused_with_the_holder() -> None:
    with ReplicaLock("planner-a", "127.0.0.1:9092"):
        with pytest.raises(ReplicaInUse, match=r"transactional\.id planner-a \(pid \d+ on this"):
            ReplicaLock("planner-a", "127.0.0.1:9092").acquire()
        with ReplicaLock("planner-b", "127.0.0.1:9092"):  # another id
            pass
        with ReplicaLock("planner-a", "10.0.0.1:9092"):  # another cluster
            pass
    with ReplicaLock("planner-a", "127.0.0.1:9092"):  # released on exit
        pass


def test_the_lock_dies_with_its_process(private_tmp: Path) -> None:
    holder = (
        "import sys, time\n"
        "from tracebound.replica import ReplicaLock\n"
        "lock = ReplicaLock('planner-a', 'k:1')\n"
        "lock.acquire()\n"
        "print('held', flush=True)\n"
        "time.sleep(60)\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", holder],
        stdout=subprocess.PIPE,
        text=True,
        env={**__import__("os").environ, "TMPDIR": str(private_tmp)},
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "held"
        with pytest.raises(ReplicaInUse, match=f"pid {child.pid} "):
            ReplicaLock("planner-a", "k:1").acquire()
    finally:
        child.kill()
        child.wait()
        if child.stdout is not None:
            child.stdout.close()
    with ReplicaLock("planner-a", "k:1"):
        pass


def _message(err: KafkaError) -> object:
    class Message:
        def error(self) -> KafkaError:
            return err

    return Message()


def test_a_replaced_static_member_is_told_apart_from_other_fatal_errors() -> None:
    fenced = KafkaError(
        KafkaError._FATAL,
        "Fatal consumer error: Broker: Static consumer fenced by other consumer with same"
        " group.instance.id",
    )
    assert edge.replaced_member(_message(fenced))
    assert edge.replaced_member(_message(KafkaError(KafkaError.FENCED_INSTANCE_ID)))
    other = KafkaError(KafkaError._FATAL, "Fatal error: producer fenced")
    assert not edge.replaced_member(_message(other))
    assert not edge.replaced_member(_message(KafkaError(KafkaError._TRANSPORT)))


def test_members_are_static_and_cooperative_and_assignments_read_well() -> None:
    assert edge.member_config("planner-a") == {
        "group.instance.id": "planner-a",
        "partition.assignment.strategy": "cooperative-sticky",
    }
    parts = [TopicPartition("b", 2), TopicPartition("a", 5), TopicPartition("a", 0)]
    assert edge.describe_partitions(parts) == "a[0,5] b[2]"
    assert edge.describe_partitions([]) == "none"


def test_a_consumers_fatal_error_is_fatal_even_unflagged() -> None:
    # librdkafka hands a consumer's fatal error out as code _FATAL, not flagged fatal.
    assert edge.classify(KafkaError(KafkaError._FATAL, "Fatal error")) is edge.Severity.FATAL


def test_a_member_replaced_again_and_again_shares_its_id_with_a_live_process() -> None:
    from tracebound.runtime.membership import GroupWatch

    watch = GroupWatch()
    watch.replaced("planner-twin", 0.0)  # once or twice: a coordinator's confusion
    watch.replaced("planner-twin", 100.0)
    watch.replaced("planner-twin", 450.0)  # both earlier ones are out of the window by now
    watch.replaced("planner-twin", 460.0)
    with pytest.raises(ReplicaInUse, match=r"transactional\.id planner-twin \(a member"):
        watch.replaced("planner-twin", 470.0)
