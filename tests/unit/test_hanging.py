"""Forgotten transactions: which partitions are proven held, and the sweep's one transaction."""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import KafkaError, TopicPartition

from tracebound.events import DiagnosisRequested
from tracebound.runtime.hanging import OffsetsWatch, Sweeper
from tracebound.runtime.metrics import ServiceMetrics
from tracebound.runtime.service import ServiceSpec
from tracebound.settings import KafkaSettings, RuntimeSettings

A, B = ("in", 0), ("in", 1)


def _positions(**offsets: int) -> list[TopicPartition]:
    return [TopicPartition("in", int(p[1:]), o) for p, o in offsets.items()]


def test_a_partition_is_silent_once_nothing_was_read_from_it_for_the_whole_wait() -> None:
    watch = OffsetsWatch(confirm_s=40.0, silent_s=30.0, every_s=10.0)
    assert watch.silent(_positions(p0=-1001, p1=-1001), 100.0) == []
    assert watch.silent(_positions(p0=-1001, p1=17), 110.0) == []  # p1 was read from
    assert watch.silent(_positions(p0=-1001, p1=-1001), 130.0) == [A]  # p1 counts again
    assert watch.silent(_positions(p0=-1001, p1=-1001), 160.0) == [A, B]
    assert watch.silent(_positions(p1=-1001), 170.0) == [B]  # p0 revoked


def test_an_assignment_starts_the_silence_over() -> None:
    watch = OffsetsWatch(confirm_s=40.0, silent_s=30.0)
    watch.silent(_positions(p0=-1001), 100.0)
    watch.forget([A])
    assert watch.silent(_positions(p0=-1001), 131.0) == []
    assert watch.silent(_positions(p0=-1001), 161.0) == [A]


def test_offsets_are_proven_held_only_when_unstable_past_the_confirmation() -> None:
    watch = OffsetsWatch(confirm_s=40.0)
    assert watch.proven({A, B}, 100.0) == []
    assert watch.proven({A}, 120.0) == []  # B's transaction ended: a live one
    assert watch.proven({A, B}, 139.0) == []
    assert watch.proven({A, B}, 140.0) == [A]
    assert watch.proven({A, B}, 150.0) == []  # A starts over after its sweep
    assert watch.proven({A, B}, 179.0) == [B]


def test_checks_are_due_every_interval() -> None:
    watch = OffsetsWatch(confirm_s=40.0, every_s=10.0)
    assert watch.due(0.0)
    assert not watch.due(9.9)
    assert watch.due(10.0)


class _Future:
    def __init__(self, value: Any) -> None:
        self.value = value

    def result(self, _timeout: float | None = None) -> Any:
        return self.value

    def done(self) -> bool:
        return True


class _Admin:
    def __init__(self, offsets: list[Any]) -> None:
        self.offsets = offsets
        self.asked: list[bool] = []

    def list_consumer_group_offsets(
        self, requests: list[Any], require_stable: bool, request_timeout: float
    ) -> dict[str, _Future]:
        self.asked.append(require_stable)
        group = requests[0].group_id
        return {group: _Future(type("Result", (), {"topic_partitions": self.offsets}))}


class _Producer:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def begin_transaction(self) -> None:
        self.calls.append(("begin",))

    def produce(self, topic: str, **kwargs: Any) -> None:
        self.calls.append(("produce", topic, kwargs["partition"], kwargs["value"]))

    def send_offsets_to_transaction(self, offsets: Any, group: Any, timeout: float) -> None:
        self.calls.append(("offsets", [(tp.topic, tp.partition, tp.offset) for tp in offsets]))

    def abort_transaction(self, timeout: float) -> None:
        self.calls.append(("abort",))


class _Consumer:
    def list_topics(self, timeout: float) -> Any:
        topic = type("T", (), {"partitions": {0: None, 1: None}, "error": None})
        return type("M", (), {"topics": {"out": topic, "dlq": topic}})

    def consumer_group_metadata(self) -> str:
        return "metadata"


def _sweeper(admin: _Admin) -> Sweeper:
    spec = ServiceSpec(
        name="g",
        input_topics=("in",),
        handler=lambda _e: [],
        accepts=(DiagnosisRequested,),
        dead_letter_topic="dlq",
        output_topics=("out", "dlq"),
    )
    runtime = RuntimeSettings(replica_id="a")
    sweeper = Sweeper(KafkaSettings(), "g-a", spec, runtime, ServiceMetrics("g"))
    sweeper._admin = admin
    return sweeper


def test_the_sweep_aborts_one_transaction_over_every_output_partition_and_the_offsets() -> None:
    stable = [TopicPartition("in", 0, 42), TopicPartition("in", 1, -1001)]
    admin, producer = _Admin(stable), _Producer()
    _sweeper(admin).sweep(producer, _Consumer(), [A, B], 10.0)
    assert producer.calls == [
        ("begin",),
        ("produce", "out", 0, None),
        ("produce", "out", 1, None),
        ("produce", "dlq", 0, None),
        ("produce", "dlq", 1, None),
        # the stable offsets (none yet: the beginning), dropped by the abort anyway
        ("offsets", [("in", 0, 42), ("in", 1, 0)]),
        ("abort",),
    ]
    assert admin.asked == [False]


def test_a_check_asks_and_a_later_turn_reads_the_answer() -> None:
    unstable = KafkaError(KafkaError.UNSTABLE_OFFSET_COMMIT)
    held = SimpleNamespace(topic="in", partition=0, offset=-1001, error=unstable)
    admin = _Admin([held, TopicPartition("in", 1, 5)])
    sweeper = _silent_sweeper(admin)
    assert sweeper.stuck(_SilentConsumer(), 100.0) == []  # asked
    assert admin.asked == [True]
    assert sweeper.stuck(_SilentConsumer(), 101.0) == []  # answered: A unstable since now
    assert _figure(sweeper, "tracebound_unstable_offsets") == 1
    assert sweeper.stuck(_SilentConsumer(), 200.0) == []  # asked again
    assert sweeper.stuck(_SilentConsumer(), 201.0) == [A]  # only the unstable one


def test_an_unanswered_check_is_dropped_and_asked_again() -> None:
    admin = _Admin([])
    sweeper = _silent_sweeper(admin)
    sweeper.stuck(_SilentConsumer(), 100.0)
    sweeper._asked = (SimpleNamespace(done=lambda: False), 100.0, [A])
    assert sweeper.stuck(_SilentConsumer(), 105.0) == []
    assert sweeper._asked is not None  # still waiting
    assert sweeper.stuck(_SilentConsumer(), 111.0) == []
    assert sweeper._asked is None  # dropped past the call timeout
    sweeper.stuck(_SilentConsumer(), 112.0)
    assert len(admin.asked) == 2


def test_offsets_still_held_after_a_sweep_are_reported_not_swept_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    unstable = KafkaError(KafkaError.UNSTABLE_OFFSET_COMMIT)
    admin = _Admin([SimpleNamespace(topic="in", partition=0, offset=-1001, error=unstable)])
    sweeper = _silent_sweeper(admin)
    sweeper.stuck(_SilentConsumer(), 100.0)
    sweeper.stuck(_SilentConsumer(), 101.0)
    sweeper.stuck(_SilentConsumer(), 200.0)
    assert sweeper.stuck(_SilentConsumer(), 201.0) == [A]
    sweeper.sweep(_Producer(), _Consumer(), [A], 10.0)
    assert _figure(sweeper, "tracebound_forgotten_transactions_swept_total") == 1
    sweeper.stuck(_SilentConsumer(), 300.0)
    sweeper.stuck(_SilentConsumer(), 301.0)
    sweeper.stuck(_SilentConsumer(), 400.0)
    with caplog.at_level(logging.ERROR, "tracebound.runtime"):
        assert sweeper.stuck(_SilentConsumer(), 401.0) == []
    assert "another transactional.id holds them" in caplog.text
    admin.offsets = [TopicPartition("in", 0, 7)]  # stable again: a new incident is swept
    sweeper.stuck(_SilentConsumer(), 500.0)
    sweeper.stuck(_SilentConsumer(), 501.0)
    assert A not in sweeper._swept


def _figure(sweeper: Sweeper, name: str) -> float | None:
    value: float | None = sweeper._metrics.registry.get_sample_value(name, {"service": "g"})
    return value


class _SilentConsumer(_Consumer):
    def assignment(self) -> list[TopicPartition]:
        return [TopicPartition("in", 0), TopicPartition("in", 1)]

    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        return [TopicPartition(tp.topic, tp.partition, -1001) for tp in partitions]


def _silent_sweeper(admin: _Admin) -> Sweeper:
    sweeper = _sweeper(admin)
    sweeper.watch = OffsetsWatch(confirm_s=40.0, silent_s=0.0, every_s=1.0)
    return sweeper
