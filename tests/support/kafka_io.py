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

from confluent_kafka import Consumer, Producer

from tracebound.codec import SingleObjectCodec
from tracebound.errors import PoisonInput
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


def make_producer(kafka: KafkaSettings) -> Producer:
    return Producer(
        {
            **kafka.client_config(),
            "enable.idempotence": "true",
            "message.timeout.ms": "180000",
            "linger.ms": "5",
        }
    )


def produce_raw(kafka: KafkaSettings, topic: str, items: Iterable[tuple[bytes, bytes]]) -> None:
    producer = make_producer(kafka)
    for key, value in items:
        producer.produce(topic, key=key, value=value)
        producer.poll(0)
    assert producer.flush(180) == 0, "inputs not acknowledged by the broker"


def produce_events(kafka: KafkaSettings, topic: str, events: Iterable[Event]) -> None:
    produce_raw(kafka, topic, ((e.run_id.encode(), CODEC.encode(e)) for e in events))


class Collector:
    """Reads a topic ``read_committed`` from the beginning in a background thread."""

    def __init__(self, kafka: KafkaSettings, topic: str) -> None:
        self.events: list[Event] = []
        self.raw: list[bytes] = []
        self._stop = threading.Event()
        self._consumer = Consumer(
            {
                **kafka.client_config(),
                "group.id": f"test-reader-{uuid.uuid4().hex[:8]}",
                "isolation.level": "read_committed",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": "false",
            }
        )
        self._consumer.subscribe([topic])
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            for msg in self._consumer.consume(500, 0.2):
                value = msg.value()
                if msg.error() is None and value is not None:
                    self.raw.append(value)
                    try:
                        self.events.append(CODEC.decode(value))
                    except PoisonInput:
                        continue  # other tests' poison in shared topics

    def wait_for(self, count: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(self.events) >= count:
                return True
            time.sleep(0.2)
        return len(self.events) >= count

    def wait_until(self, done: Callable[[list[Event]], bool], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if done(list(self.events)):
                return True
            time.sleep(0.1)
        return done(list(self.events))

    def settle(self, seconds: float = 3.0) -> None:
        """Keep reading a little longer so duplicates would have time to show."""
        time.sleep(seconds)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self._consumer.close()


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
