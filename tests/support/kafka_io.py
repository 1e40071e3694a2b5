"""Producing test inputs and reading outputs on the real broker."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaException, TopicPartition

from tracebound import kafka as edge
from tracebound.codec import SingleObjectCodec
from tracebound.events import DiagnosisRequest, DiagnosisRequested, Event
from tracebound.events import Producer as ProducerRef
from tracebound.settings import KafkaSettings

REPO = Path(__file__).resolve().parents[2]
CODEC = SingleObjectCodec()


def request_event(query: str, run_id: str | None = None) -> DiagnosisRequested:
    return DiagnosisRequested(
        run_id=run_id or str(uuid.uuid4()),
        producer=ProducerRef(service="test"),
        request=DiagnosisRequest(mode="CHAT", query=query),
    )


def make_producer(kafka: KafkaSettings) -> Any:
    return edge.producer(kafka, "test", config={"message.timeout.ms": "180000", "linger.ms": "5"})


def produce_raw(kafka: KafkaSettings, topic: str, items: Iterable[tuple[bytes, bytes]]) -> None:
    producer = make_producer(kafka)
    for key, value in items:
        producer.produce(topic, key=key, value=value)
        producer.poll(0)
    assert producer.flush(180) == 0, "inputs not acknowledged by the broker"


def produce_events(kafka: KafkaSettings, topic: str, events: Iterable[Event]) -> None:
    produce_raw(kafka, topic, ((e.run_id.encode(), CODEC.encode(e)) for e in events))


class Collector:
    """Reads a topic ``read_committed`` in a background thread.

    By default all of it, ``from_end`` only what is published after construction.
    The partitions are assigned by hand, never through a consumer group: a group
    whose coordinator restarts (a broker-restart test) would rebalance and, with
    nothing committed, read the topic again from the start.
    """

    def __init__(self, kafka: KafkaSettings, topic: str, *, from_end: bool = False) -> None:
        self.topic = topic
        self.events: list[Event] = []
        self.raw: list[bytes] = []
        self.stamps: list[float] = []  # each record's timestamp (s), in reading order
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._consumer = edge.consumer(kafka, "test-reader")
        starts = edge.assign_whole(self._consumer, [topic], from_end=from_end)
        # Partitions added while it reads (a partition-count change) are read too.
        self._follower = edge.PartitionFollower([topic], starts, interval_s=2.0)
        self._thread = threading.Thread(target=self._run, name=f"tail-{topic}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                batch = edge.next_batch(self._consumer, 500, 0.2)
                self._follower.follow(self._consumer)
            except KafkaException:
                time.sleep(0.2)
                continue
            for msg in batch:
                value = msg.value()
                if msg.error() is None and value is not None:
                    with self._lock:
                        self.raw.append(value)
                        self.stamps.append(msg.timestamp()[1] / 1000)
                        # other tests' poison in shared topics is passed over
                        self.events += edge.decoded(CODEC, [msg])

    def snapshot(self) -> list[Event]:
        with self._lock:
            return list(self.events)

    def wait_for(self, count: int, timeout: float) -> bool:
        return self.wait_until(lambda events: len(events) >= count, timeout)

    def wait_until(self, done: Callable[[list[Event]], bool], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if done(self.snapshot()):
                return True
            time.sleep(0.1)
        return done(self.snapshot())

    def settle(self, seconds: float = 3.0) -> None:
        """Keep reading a little longer so duplicates would have time to show."""
        time.sleep(seconds)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self._consumer.close()


class TopicTail(Collector):
    """What is published on ``topic`` from construction on."""

    def __init__(self, kafka: KafkaSettings, topic: str) -> None:
        super().__init__(kafka, topic, from_end=True)


def start_echo(env: dict[str, str], **topics: str) -> subprocess.Popen[bytes]:
    full = dict(env)
    full.update({f"TB_TEST_{k.upper()}": v for k, v in topics.items()})
    full.setdefault("PYTHONPATH", str(REPO))
    log_path = os.environ.get("TB_TEST_SERVICE_LOG") or os.devnull
    with open(log_path, "ab") as log:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(
            [sys.executable, "-m", "tests.support.echo_service"],
            cwd=REPO,
            env=full,
            stdout=log,
            stderr=log,
        )


def pass_over(kafka: KafkaSettings, role: str, topic_names: Iterable[str]) -> None:
    """Move ``role``'s consumer group to the end of ``topic_names``: what a test left there
    for no role to run is not run by the next test's pipeline. The role must be stopped."""
    consumer = edge.consumer(kafka, "test-pass-over", group=role)
    try:
        ends = edge.end_offsets(consumer, topic_names)
        moves = [TopicPartition(topic, number, end) for (topic, number), end in ends.items()]
        consumer.commit(offsets=moves, asynchronous=False)
    finally:
        consumer.close()
