"""A reader that assigns partitions itself picks up partitions added to its topics."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from confluent_kafka import TopicPartition

from tracebound import kafka as edge

TOPIC = "runs"


class _Consumer:
    """Just enough of a consumer: metadata, positions, watermarks, the assignment."""

    def __init__(self, partitions: int, positions: dict[int, int]) -> None:
        self.partitions = partitions
        self.positions = positions
        self.assigned: dict[tuple[str, int], int] | None = None

    def list_topics(self, timeout: float) -> Any:
        found = {p: None for p in range(self.partitions)}
        return SimpleNamespace(topics={TOPIC: SimpleNamespace(partitions=found, error=None)})

    def position(self, asked: list[TopicPartition]) -> list[TopicPartition]:
        return [
            TopicPartition(tp.topic, tp.partition, self.positions.get(tp.partition, -1001))
            for tp in asked
        ]

    def get_watermark_offsets(
        self, tp: TopicPartition, timeout: float, cached: bool
    ) -> tuple[int, int]:
        return 0, 10

    def assign(self, partitions: list[TopicPartition]) -> None:
        self.assigned = {(tp.topic, tp.partition): tp.offset for tp in partitions}


def test_new_partitions_are_read_from_their_start_the_others_go_on() -> None:
    consumer = _Consumer(partitions=2, positions={0: 8})
    follower = edge.PartitionFollower([TOPIC], {(TOPIC, 0): 5, (TOPIC, 1): 7}, interval_s=0)
    assert follower.follow(consumer) == []
    assert consumer.assigned is None, "nothing new: the assignment is left alone"
    consumer.partitions = 3
    assert follower.follow(consumer) == [(TOPIC, 2)]
    # partition 0 from where it was read to, 1 (not read yet) from its start offset
    assert consumer.assigned == {(TOPIC, 0): 8, (TOPIC, 1): 7, (TOPIC, 2): 0}


def test_it_looks_only_once_per_interval() -> None:
    consumer = _Consumer(partitions=2, positions={})
    follower = edge.PartitionFollower([TOPIC], {(TOPIC, 0): 0}, interval_s=3600)
    assert follower.follow(consumer) == []
    assert consumer.assigned is None
