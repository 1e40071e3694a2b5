"""The alerts input topic: Alertmanager JSON written by any producer, read into runs.

Kafka shops publish alerts to a topic (kcat, Vector, Kafka Connect, a bridge from
Alertmanager) rather than call a webhook. Each record is one webhook payload
(version 4), one alert object, or a list of alerts; it goes through the same
:class:`~services.ingest.intake.Intake` as the webhook, so grouping and incident
deduplication are the same, and the PostgreSQL incident store is what makes a
re-read after a crash publish nothing new.

The reader is its own consumer group (Kafka keeps its position) and commits a
record's offset only after the runs it made were acknowledged. A record that can
never be read (not JSON, wrong shape, too large) becomes a ``DeadLetter`` with the
reason and is committed, so the partition keeps moving; a PostgreSQL or Kafka
failure is retried with backoff and nothing is committed, so no record is skipped.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

from confluent_kafka import KafkaException, TopicPartition

from services.ingest.alertmanager import SERVICE, load_document
from services.ingest.intake import Intake
from services.ingest.models import AlertmanagerWebhook
from tracebound import kafka as edge
from tracebound.errors import InvalidInputError, TransientError
from tracebound.events import Event
from tracebound.events import Producer as ProducerRef
from tracebound.runtime.dead_letters import dead_letter
from tracebound.settings import KafkaSettings
from tracebound.tracing import active as active_tracing
from tracebound.tracing import carrier_of

log = logging.getLogger(__name__)
GROUP = "ingest-alerts"
BATCH = 100
BACKOFF_INITIAL_S = 0.5
BACKOFF_MAX_S = 15.0
# A dead letter keeps the record's bytes up to this size: well under the producer's
# message limit, so a large unreadable record can never block its partition.
MAX_KEPT_BYTES = 512 * 1024


class OversizedRecord(InvalidInputError):
    """A record larger than the ingest accepts from any client."""


def parse_record(value: bytes | None, max_bytes: int, receiver: str) -> AlertmanagerWebhook:
    """The payload of one record; ``InvalidInputError`` says why a record is refused."""
    if value is None:
        raise InvalidInputError("empty record (no value)")
    if len(value) > max_bytes:
        raise OversizedRecord(f"record of {len(value)} bytes is larger than {max_bytes}")
    return load_document(value, receiver)


class AlertTopicReader:
    """The thread that turns the alerts topic into runs, one committed record at a time."""

    def __init__(
        self,
        kafka: KafkaSettings,
        topic: str,
        max_bytes: int,
        publish: Callable[[Sequence[Event]], None],
        backoff_s: float = BACKOFF_INITIAL_S,
    ) -> None:
        self._kafka = kafka
        self._topic = topic
        self._max_bytes = max_bytes
        self._publish = publish
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._first_backoff = self._backoff = backoff_s

    def start(self, intake: Intake) -> None:
        self._thread = threading.Thread(
            target=self._run, args=(intake,), name="ingest-alerts", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(15)

    def handle(self, intake: Intake, message: Any) -> None:
        """Runs from one record, or its dead letter; ``TransientError`` means try again."""
        try:
            payload = parse_record(message.value(), self._max_bytes, self._topic)
        except InvalidInputError as exc:
            letter = dead_letter(
                message, exc, service=SERVICE, producer=ProducerRef(service=SERVICE)
            )
            if len(letter.value or b"") > MAX_KEPT_BYTES:
                note = f" (value of {len(letter.value or b'')} bytes not kept)"
                letter = letter.model_copy(
                    update={"value": None, "error_message": letter.error_message + note}
                )
            self._publish([letter])
            log.warning(
                "alerts record %s[%d]@%d dead-lettered: %s",
                message.topic(),
                message.partition(),
                message.offset(),
                letter.error_message[:200],
            )
            return
        parent = carrier_of(message.headers()) if active_tracing().enabled else None
        intake.accept(payload, source=f"topic {self._topic}", parent=parent)

    def _run(self, intake: Intake) -> None:
        consumer: Any = None
        while not self._stop.is_set():
            if consumer is None:
                try:
                    consumer = edge.consumer(self._kafka, GROUP, group=GROUP)
                    consumer.subscribe([self._topic])
                except KafkaException as exc:
                    log.warning("alerts topic reader cannot start yet: %s", exc)
                    self._stop.wait(2)
                    continue
            self.step(consumer, intake)
        if consumer is not None:
            consumer.close()

    def step(self, consumer: Any, intake: Intake) -> None:
        """Handle and commit record by record; on a failure, rewind and come back later.

        Going back to ``poll`` between retries keeps the reader in its group while
        PostgreSQL or Kafka is away; the records from the failed one on are read again.
        """
        messages = edge.next_batch(consumer, BATCH, 0.5)
        for i, message in enumerate(messages):
            if edge.consumer_error(message) is not None:
                continue
            try:
                self.handle(intake, message)
            except TransientError as exc:
                log.warning("alerts record not accepted, retry in %.1fs: %s", self._backoff, exc)
                _rewind(consumer, messages[i:])
                self._stop.wait(self._backoff)
                self._backoff = min(self._backoff * 2, BACKOFF_MAX_S)
                return
            self._backoff = self._first_backoff
            try:
                consumer.commit(
                    offsets=[
                        TopicPartition(message.topic(), message.partition(), message.offset() + 1)
                    ],
                    asynchronous=False,
                )
            except KafkaException as exc:
                # Handled but not committed: a re-read finds the incidents already claimed.
                log.warning("alerts offset not committed: %s", exc)
                _rewind(consumer, messages[i + 1 :])
                return


def _rewind(consumer: Any, rest: Sequence[Any]) -> None:
    """Seek each partition back to its first unfinished record (for a clean stop)."""
    first: dict[tuple[str, int], int] = {}
    for message in rest:
        if message.error() is None:
            first.setdefault((message.topic(), message.partition()), message.offset())
    for (topic, partition), offset in first.items():
        try:
            consumer.seek(TopicPartition(topic, partition, offset))
        except KafkaException:
            log.info("partition %s[%d] no longer ours", topic, partition)
