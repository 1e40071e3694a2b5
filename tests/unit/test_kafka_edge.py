"""The Kafka edge without a broker: range reads, points in time, errors, lag, clients."""

from __future__ import annotations

from collections import deque
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, KafkaError, KafkaException, TopicPartition
from prometheus_client import generate_latest

from tests.support.kafka_io import CODEC
from tests.support.messages import Message
from tests.support.samples import sample
from tracebound import kafka as edge
from tracebound.events import Answer
from tracebound.kafka import offsets
from tracebound.kafka.clients import CONSUMER_DEFAULTS
from tracebound.runtime.metrics import ServiceMetrics
from tracebound.settings import KafkaSettings

T = "t.a"


def Msg(partition: int, offset: int, value: bytes | None = b"x", eof: bool = False) -> Message:
    return Message(
        T, partition, offset, value, None, KafkaError(KafkaError._PARTITION_EOF) if eof else None
    )


class FakeConsumer:
    """Hands out queued messages; knows watermarks, times and positions of partition 0/1."""

    def __init__(self, messages: list[Message]) -> None:
        self.queue = deque(messages)
        self.assigned: list[TopicPartition] = []
        self.marks = {0: (2, 10), 1: (0, 4)}

    def assign(self, partitions: list[TopicPartition]) -> None:
        self.assigned = partitions

    def assignment(self) -> list[TopicPartition]:
        return [TopicPartition(tp.topic, tp.partition) for tp in self.assigned]

    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        return [
            TopicPartition(tp.topic, tp.partition, 7 if tp.partition == 0 else -1001)
            for tp in partitions
        ]

    def poll(self, _timeout: float) -> Message | None:
        return self.queue.popleft() if self.queue else None

    def consume(self, num_messages: int, timeout: float) -> list[Message]:
        out: list[Message] = []
        while self.queue and len(out) < num_messages:
            out.append(self.queue.popleft())
        return out

    def get_watermark_offsets(self, tp: TopicPartition, **_: Any) -> tuple[int, int]:
        return self.marks[tp.partition]

    def offsets_for_times(self, asked: list[TopicPartition], **_: Any) -> list[TopicPartition]:
        # partition 0 has a message that recent at offset 5, partition 1 has none
        return [
            TopicPartition(tp.topic, tp.partition, 5 if tp.partition == 0 else -1) for tp in asked
        ]


def test_a_range_read_stops_at_the_end_offsets_and_at_an_end_of_partition() -> None:
    consumer = FakeConsumer(
        [Msg(0, 3), Msg(1, 0), Msg(0, 4), Msg(1, 2, eof=True), Msg(1, 3, eof=True), Msg(0, 5)]
    )
    reader = edge.RangeReader(consumer, {(T, 0): 3}, {(T, 0): 5, (T, 1): 3, (T, 2): 0})
    assert consumer.assigned == [TopicPartition(T, 0, 3), TopicPartition(T, 1, OFFSET_BEGINNING)]
    got = reader.next(3, 0)
    assert [(m.partition(), m.offset()) for m in got] == [(0, 3), (1, 0), (0, 4)]
    assert reader.pending == {(T, 1)}, "partition 0 ends with its message at end - 1"
    assert reader.next(1, 0) == [] and reader.pending == {(T, 1)}, "an early end is not the end"
    assert reader.next(1, 0) == [] and reader.done, "the end of partition at its end offset is"


def test_a_point_in_time_starts_at_its_offset_or_at_the_end() -> None:
    consumer = FakeConsumer([])
    keys = [(T, 0), (T, 1)]
    assert edge.offsets_since(consumer, keys, None) == {(T, 0): 2, (T, 1): 0}
    assert edge.offsets_since(consumer, keys, 1_000) == {(T, 0): 5, (T, 1): 4}


def test_errors_are_classified_once() -> None:
    assert edge.classify(KafkaError(KafkaError._PARTITION_EOF)) is edge.Severity.END_OF_PARTITION
    assert edge.classify(KafkaError(KafkaError._FENCED, fatal=True)) is edge.Severity.FATAL
    abortable = KafkaError(KafkaError._STATE, txn_requires_abort=True, retriable=True)
    assert edge.classify(abortable) is edge.Severity.ABORTABLE
    assert (
        edge.classify(KafkaError(KafkaError._TIMED_OUT, retriable=True)) is edge.Severity.RETRIABLE
    )
    assert edge.consumer_error(Msg(0, 1)) is None


def test_decoded_passes_over_errors_and_poison_and_reports_poison() -> None:
    answer = sample(Answer)
    poison: list[int] = []
    messages = [Msg(0, 0, CODEC.encode(answer)), Msg(0, 1, b"junk"), Msg(0, 2, eof=True)]
    events = list(edge.decoded(CODEC, messages, lambda m, _exc: poison.append(m.offset())))
    assert [e.event_id for e in events] == [answer.event_id] and poison == [1]


def test_lag_is_the_end_minus_the_position_or_the_checkpoint() -> None:
    metrics = ServiceMetrics("planner")
    consumer = FakeConsumer([])
    consumer.assign([TopicPartition(T, 0), TopicPartition(T, 1)])
    edge.LagGauge(metrics, "planner").refresh(consumer)
    edge.LagGauge(metrics, "models").refresh(consumer, {(T, 0): 9}.get)
    text = generate_latest(metrics.registry).decode()
    lines = {line for line in text.splitlines() if line.startswith("tracebound_consumer_lag{")}
    assert lines == {
        f'tracebound_consumer_lag{{partition="0",service="planner",topic="{T}"}} 3.0',
        f'tracebound_consumer_lag{{partition="1",service="planner",topic="{T}"}} 0.0',
        f'tracebound_consumer_lag{{partition="0",service="models",topic="{T}"}} 1.0',
        f'tracebound_consumer_lag{{partition="1",service="models",topic="{T}"}} 4.0',
    }


def test_every_consumer_reads_committed_and_commits_nothing_by_itself() -> None:
    assert CONSUMER_DEFAULTS["isolation.level"] == "read_committed"
    assert CONSUMER_DEFAULTS["enable.auto.commit"] == "false"
    # librdkafka refuses an unknown or malformed property when the client is built
    kafka = KafkaSettings(bootstrap_servers="127.0.0.1:1")
    edge.consumer(kafka, "test", config=edge.READ_TO_END).close()
    edge.transactional_producer(kafka, "test-0", 30_000).flush(0)


class SettlingConsumer:
    """Answers NOT_LEADER a few times, as a partition just created may, then its marks."""

    def __init__(self, failures: int, code: int = KafkaError.NOT_LEADER_FOR_PARTITION) -> None:
        self.failures, self.code, self.calls = failures, code, 0

    def get_watermark_offsets(self, tp: TopicPartition, **_: Any) -> tuple[int, int]:
        self.calls += 1
        if self.calls <= self.failures:
            raise KafkaException(KafkaError(self.code))
        return 0, 7


def test_watermarks_are_asked_again_while_leadership_settles(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(offsets, "_SETTLE_PAUSE_S", 0.01)  # the pause is not what is tested
    consumer = SettlingConsumer(failures=2)
    assert edge.watermarks(consumer, [("t", 0)]) == {("t", 0): (0, 7)}
    assert consumer.calls == 3


def test_watermarks_raise_other_errors_at_once() -> None:
    consumer = SettlingConsumer(failures=1, code=KafkaError.TOPIC_AUTHORIZATION_FAILED)
    with pytest.raises(KafkaException):
        edge.watermarks(consumer, [("t", 0)])
    assert consumer.calls == 1
