"""Poison for the fault scenarios: undecodable or invalid records on every input topic.

Each input topic gets three kinds (random bytes, an unknown schema fingerprint, a
valid encoding of an invalid event), and each must come back as a dead letter of
the role consuming that topic, with the reason the kind calls for.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tests.support.kafka_io import CODEC
from tests.support.samples import sample
from tracebound import kafka as edge
from tracebound import topics
from tracebound.events import (
    DeadLetter,
    DiagnosisRequest,
    DiagnosisRequested,
    Event,
    EvidenceProduced,
    GatekeeperResult,
    PlanProduced,
    RetryRequested,
    Verdict,
)
from tracebound.settings import KafkaSettings

# Which role consumes each input topic (and so dead-letters its poison).
CONSUMER_OF = {
    topics.REQUESTS: "planner",
    topics.PLANS: "executor",
    topics.RETRIES: "executor",
    topics.EVIDENCE: "gatekeeper",
    topics.GATEKEEPER_RESULTS: "verifier",
    topics.VERDICTS: "composer",
}
EVENT_OF: dict[str, type[Event]] = {
    topics.REQUESTS: DiagnosisRequested,
    topics.PLANS: PlanProduced,
    topics.RETRIES: RetryRequested,
    topics.EVIDENCE: EvidenceProduced,
    topics.GATEKEEPER_RESULTS: GatekeeperResult,
    topics.VERDICTS: Verdict,
}
POISON_REASONS = {
    "random-bytes": "DecodeError",
    "unknown-fingerprint": "UnknownSchemaError",
    "invalid-model": "EventValidationError",
}


@dataclass(frozen=True)
class PoisonRecord:
    kind: str
    topic: str
    partition: int
    offset: int


def poison_values(topic: str, rng: random.Random) -> dict[str, bytes]:
    """The three kinds of poison for ``topic``: random bytes, unknown fingerprint, bad model."""
    cls = EVENT_OF[topic]
    valid = sample(cls).model_copy(update={"run_id": f"poison-{uuid.uuid4().hex[:8]}"})
    body = CODEC.encode(valid)
    bad_request = DiagnosisRequest.model_construct(
        mode="NOT-A-MODE",  # type: ignore[arg-type]
        query="poison",
        alerts=(),
        language="en",
        requested_by="",
    )
    invalid = valid.model_copy(update={"request": bad_request})
    return {
        "random-bytes": b"\x00\x07" + rng.randbytes(61),
        "unknown-fingerprint": b"\xc3\x01" + bytes(8) + body[10:],
        "invalid-model": CODEC.encode(invalid),
    }


def inject_poison(kafka: KafkaSettings, seed: int) -> list[PoisonRecord]:
    """Three poison records into every input topic; where each one landed."""
    rng = random.Random(seed)
    producer = edge.producer(kafka, "test-poison")
    landed: list[PoisonRecord] = []
    failures: list[str] = []
    for topic in CONSUMER_OF:
        for kind, value in poison_values(topic, rng).items():

            def delivered(err: Any, msg: Any, kind: str = kind) -> None:
                if err is not None:
                    failures.append(str(err))
                else:
                    landed.append(PoisonRecord(kind, msg.topic(), msg.partition(), msg.offset()))

            producer.produce(
                topic, key=f"poison-{kind}".encode(), value=value, on_delivery=delivered
            )
    assert producer.flush(60) == 0 and not failures, f"poison not acknowledged: {failures}"
    return landed


def missing_dead_letters(poison: Sequence[PoisonRecord], letters: Sequence[Event]) -> list[str]:
    """Each poison record as a dead letter of its consumer with the expected reason."""
    found = {
        (e.source_topic, e.source_partition, e.source_offset): e
        for e in letters
        if isinstance(e, DeadLetter) and e.service == CONSUMER_OF.get(e.source_topic)
    }
    problems = []
    for p in poison:
        letter = found.get((p.topic, p.partition, p.offset))
        if letter is None:
            problems.append(f"{p.kind} on {p.topic}[{p.partition}]@{p.offset}: no dead letter")
        elif letter.error_type != POISON_REASONS[p.kind] or not letter.error_message:
            problems.append(
                f"{p.kind} on {p.topic}: dead-lettered as {letter.error_type}"
                f" ({letter.error_message!r}), expected {POISON_REASONS[p.kind]}"
            )
    return problems
