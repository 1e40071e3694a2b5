"""Co-partitioning read from the real broker: a topic with another count is named."""

from __future__ import annotations

import pytest

from tests.support.stack import StackHandle
from tracebound import kafka as edge

pytestmark = pytest.mark.integration


def test_partition_counts_from_the_broker_reveal_an_odd_topic(stack: StackHandle) -> None:
    three, also = stack.topic("copart-a", partitions=3), stack.topic("copart-b", partitions=3)
    four = stack.topic("copart-c", partitions=4)
    consumer = edge.consumer(stack.kafka, "test-copartition")
    try:
        counts = edge.partition_counts(consumer, [three, also, four, "copart-missing"], 10.0)
    finally:
        consumer.close()
    assert counts == {three: 3, also: 3, four: 4}
    with pytest.raises(edge.NotCopartitioned, match=f"2 have 3, but {four} has 4"):
        edge.check_copartitioned(counts)
