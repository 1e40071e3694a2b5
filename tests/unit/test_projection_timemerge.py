"""The time merge that keeps a run's events together when reading many partitions."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaError, TopicPartition

from projections.timemerge import TimeMerge

A, B = ("t.a", 0), ("t.b", 0)


@dataclass
class Msg:
    key: tuple[str, int]
    offset_: int
    at: int
    eof: bool = False

    def topic(self) -> str:
        return self.key[0]

    def partition(self) -> int:
        return self.key[1]

    def offset(self) -> int:
        return self.offset_

    def value(self) -> bytes:
        return b"x" * 10

    def timestamp(self) -> tuple[int, int]:
        return (1, self.at)

    def error(self) -> KafkaError | None:
        return KafkaError(KafkaError._PARTITION_EOF) if self.eof else None


@dataclass
class FakeConsumer:
    paused: set[tuple[str, int]] = field(default_factory=set)

    def pause(self, tps: list[TopicPartition]) -> None:
        self.paused |= {(tp.topic, tp.partition) for tp in tps}

    def resume(self, tps: list[TopicPartition]) -> None:
        self.paused -= {(tp.topic, tp.partition) for tp in tps}


def stamps(messages: list[Any]) -> list[tuple[str, int]]:
    return [(m.topic(), m.offset()) for m in messages]


def test_partitions_come_out_merged_by_time_up_to_the_slowest_one() -> None:
    merge = TimeMerge(lead_ms=0)
    merge.track([A, B])
    merge.add([Msg(A, 0, 10), Msg(A, 1, 20), Msg(A, 2, 30), Msg(B, 0, 15)])
    assert stamps(merge.take(100)) == [("t.a", 0), ("t.b", 0)]  # B was last seen at 15
    assert merge.first_queued(A) == 1 and merge.first_queued(B) is None
    merge.add([Msg(B, 1, 25)])
    assert stamps(merge.take(100)) == [("t.a", 1), ("t.b", 1)]
    merge.add([Msg(B, 2, 2, eof=True)])  # B is at its end: A is let out in full
    assert stamps(merge.take(100)) == [("t.a", 2)]
    assert merge.queued() == 0


def test_a_partition_that_has_not_spoken_holds_the_others() -> None:
    merge = TimeMerge(lead_ms=5)
    merge.track([A, B])
    merge.add([Msg(A, 0, 10)])
    assert merge.take(100) == []
    merge.add([Msg(B, 0, 6)])
    assert stamps(merge.take(100)) == [("t.b", 0), ("t.a", 0)]  # 10 <= 6 + lead


def test_each_partition_keeps_its_own_order_even_when_its_clock_goes_back() -> None:
    merge = TimeMerge(lead_ms=0)
    merge.track([A])
    merge.add([Msg(A, 0, 50), Msg(A, 1, 40), Msg(A, 2, 60)])
    assert stamps(merge.take(100)) == [("t.a", 0), ("t.a", 1), ("t.a", 2)]


def test_past_the_byte_budget_all_but_the_slowest_partition_are_paused() -> None:
    merge = TimeMerge(lead_ms=0, max_bytes=40)  # each message is 10 bytes
    consumer = FakeConsumer()
    merge.track([A, B])
    merge.add([Msg(A, i, 10 + i) for i in range(3)] + [Msg(B, i, i) for i in range(2)])
    merge.pace(consumer)
    assert consumer.paused == {A}  # B is the slowest: never paused
    assert len(merge.take(2)) == 2 and consumer.paused == {A}
    merge.pace(consumer)
    assert consumer.paused == {A}  # 30 bytes queued: not yet down to half the budget
    merge.done(B)
    assert len(merge.take(1)) == 1
    merge.pace(consumer)
    assert consumer.paused == set()


def test_forgotten_and_foreign_partitions_are_dropped() -> None:
    merge = TimeMerge(lead_ms=0)
    merge.track([A])
    merge.add([Msg(B, 0, 1)])  # revoked inside consume(): left to its new owner
    merge.add([Msg(A, 0, 1)])
    merge.forget([A])
    assert merge.queued() == 0 and merge.take(10) == []


def test_a_paused_partition_that_becomes_the_slowest_is_resumed() -> None:
    merge = TimeMerge(lead_ms=0, max_bytes=20)
    consumer = FakeConsumer()
    merge.track([A, B])
    merge.add([Msg(A, 0, 5), Msg(B, 0, 1), Msg(B, 1, 2)])
    merge.pace(consumer)
    assert consumer.paused == {A}  # B (last seen at 2) is the slowest
    merge.add([Msg(B, 2, 10), Msg(B, 3, 11)])  # now A is
    assert [m.offset() for m in merge.take(10)] == [0, 1, 0]  # B0, B1, then A0 up to A's 5
    merge.pace(consumer)  # 20 bytes queued: neither over budget nor down to half
    assert A not in consumer.paused, "the partition holding the watermark was left paused"
