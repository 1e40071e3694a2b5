"""A long-lived idempotent producer that returns only once the broker acknowledged.

The ingest's HTTP reply depends on it: Alertmanager retries on 5xx, so a request
is "accepted" only when Kafka has it. One producer serves all request threads;
each call tracks the delivery reports of its own messages. Anything that
publishes repeatedly (the ingest, the benchmark's load generator) keeps one,
rather than paying a producer's start-up for every request.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Protocol

from confluent_kafka import KafkaError, KafkaException

from tracebound import kafka as edge
from tracebound import tracing
from tracebound.codec import Codec, make_codec
from tracebound.errors import RecordTooLarge, TransientError
from tracebound.events import Event
from tracebound.settings import KafkaSettings

ACK_TIMEOUT_S = 20.0
# librdkafka's local check and the broker's answer, both with this code.
_SIZE_ERRORS = frozenset({KafkaError.MSG_SIZE_TOO_LARGE})


def _too_large(error: object) -> bool:
    code = getattr(error, "code", None)
    return callable(code) and code() in _SIZE_ERRORS


class Publisher(Protocol):
    def publish(self, events: Sequence[Event]) -> None:
        """Return after the broker acknowledged every event; raise TransientError if not
        (RecordTooLarge when a record can never be accepted for its size)."""

    def close(self) -> None: ...


class KafkaPublisher:
    def __init__(self, kafka: KafkaSettings, codec: Codec | None = None) -> None:
        self._codec = codec or make_codec(kafka)
        self._producer = edge.producer(
            kafka,
            "publisher",
            config={"linger.ms": "2", "message.timeout.ms": str(int(ACK_TIMEOUT_S * 1000))},
        )
        self._lock = threading.Lock()

    def publish(self, events: Sequence[Event]) -> None:
        if not events:
            return
        pending = len(events)
        failures: list[str] = []
        oversized = False
        done = threading.Event()
        guard = threading.Lock()

        def delivered(err: object, _msg: object) -> None:
            nonlocal pending, oversized
            with guard:
                if err is not None:
                    failures.append(str(err))
                    oversized = oversized or _too_large(err)
                pending -= 1
                if pending == 0:
                    done.set()

        headers = tracing.current_headers()  # the caller's span, when tracing is on
        try:
            with self._lock:
                for event in events:
                    self._producer.produce(
                        event.topic,
                        key=event.run_id.encode(),
                        value=self._codec.encode(event),
                        headers=headers,
                        on_delivery=delivered,
                    )
        except KafkaException as exc:
            if exc.args and _too_large(exc.args[0]):
                raise RecordTooLarge(f"Kafka refused a record for its size: {exc}") from exc
            raise TransientError(f"Kafka refused the request: {exc}") from exc
        except BufferError as exc:
            raise TransientError(f"Kafka refused the request: {exc}") from exc
        deadline = time.monotonic() + ACK_TIMEOUT_S + 5
        while not done.is_set() and time.monotonic() < deadline:
            self._producer.poll(0.05)  # serves whichever thread's reports are due
        if oversized:
            raise RecordTooLarge(f"Kafka refused a record for its size: {failures}")
        if failures or not done.is_set():
            raise TransientError(f"Kafka did not acknowledge: {failures or 'timeout'}")

    def close(self) -> None:
        self._producer.flush(5)
