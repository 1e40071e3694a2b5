"""Publishing requests and reading answers: what ``ask``, ``answers`` and tests use.

Answers are read by assigning every partition of ``tracebound.answers`` from the
end offsets taken *before* the request is published, so an answer can never slip
past the reader, and no consumer group is created for a one-off question.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator, Sequence

from confluent_kafka import KafkaException

from tracebound import kafka as edge
from tracebound import topics
from tracebound.codec import Codec, make_codec
from tracebound.errors import TransientError
from tracebound.events import Answer, DiagnosisRequest, DiagnosisRequested, Event
from tracebound.events import Producer as ProducerRef
from tracebound.events.base import utcnow
from tracebound.publisher import KafkaPublisher
from tracebound.settings import KafkaSettings


def new_request(
    query: str, *, language: str = "en", session_id: str | None = None, requested_by: str = "cli"
) -> DiagnosisRequested:
    return DiagnosisRequested(
        run_id=str(uuid.uuid4()),
        session_id=session_id,
        producer=ProducerRef(service="cli"),
        request=DiagnosisRequest(
            mode="CHAT",
            query=query,
            language=language,
            requested_by=requested_by,
            requested_at=utcnow(),
        ),
    )


def publish(kafka: KafkaSettings, events: Sequence[Event], codec: Codec | None = None) -> None:
    """Publish and wait until the broker acknowledged every event (idempotent producer).

    One producer per call: for repeated publishing keep a :class:`KafkaPublisher`.
    """
    publisher = KafkaPublisher(kafka, codec)
    try:
        publisher.publish(events)
    finally:
        publisher.close()


class AnswerReader:
    """Reads ``tracebound.answers`` from the offsets current at construction.

    Partitions added to the topic later are read too, from their start.
    """

    def __init__(self, kafka: KafkaSettings, *, from_start: bool = False) -> None:
        self.codec = make_codec(kafka)
        self.consumer = edge.consumer(kafka, "reader")
        try:
            starts = edge.assign_whole(self.consumer, [topics.ANSWERS], from_end=not from_start)
        except (KafkaException, TransientError) as exc:
            self.consumer.close()
            raise TransientError(f"cannot read {topics.ANSWERS}: {exc}") from exc
        self._follower = edge.PartitionFollower([topics.ANSWERS], starts)

    def answers(self, timeout_s: float | None) -> Iterator[Answer]:
        """Answers as they arrive, until ``timeout_s`` passes (None: forever)."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while deadline is None or time.monotonic() < deadline:
            messages = edge.next_batch(self.consumer, 100, 0.5)
            for event in edge.decoded(self.codec, messages):
                if isinstance(event, Answer):
                    yield event
            self._follower.follow(self.consumer)

    def wait_for(self, run_ids: set[str], timeout_s: float) -> dict[str, Answer]:
        found: dict[str, Answer] = {}
        for answer in self.answers(timeout_s):
            if answer.run_id in run_ids:
                found.setdefault(answer.run_id, answer)
                if len(found) == len(run_ids):
                    break
        return found

    def close(self) -> None:
        self.consumer.close()
