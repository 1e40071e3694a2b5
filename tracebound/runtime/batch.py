"""One batch of the service loop without Kafka: its outputs, its offsets, its start.

The handler's results are encoded and routed here, and an input the role cannot
process becomes a dead letter in the same list, so the loop only has to publish
the list and the batch's offsets in one transaction.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, NamedTuple

from confluent_kafka import TopicPartition

from tracebound.codec import Codec
from tracebound.errors import PoisonInput
from tracebound.events import Event
from tracebound.events import Producer as ProducerRef
from tracebound.runtime.dead_letters import dead_letter
from tracebound.runtime.inflight import InFlight, call
from tracebound.runtime.service import Handler, ServiceSpec
from tracebound.runtime.stages import CLOCK
from tracebound.tracing import active as active_tracing
from tracebound.tracing.context import Headers, record_headers
from tracebound.tracing.steps import TracedHandler

log = logging.getLogger("tracebound.runtime")


class Output(NamedTuple):
    """One record to publish; ``headers`` carry the trace context when tracing is on."""

    topic: str
    key: bytes | None
    value: bytes
    headers: Headers | None = None


def transform(
    spec: ServiceSpec, codec: Codec, batch: Sequence[Any], inflight: InFlight | None = None
) -> tuple[list[Output], list[str]]:
    """The encoded outputs of ``batch``, and the error type of each dead-lettered input.

    With one call at a time the handler runs over the whole batch, then its results
    are encoded, each stage timed once per batch. With several in flight the calls run
    on ``inflight``, each encoding its own outputs as it finishes (that CPU overlaps
    the other calls' waits). Either way the outputs keep the order of the inputs. A
    ``TransientError`` of the handler (or of the codec) propagates: the loop retries
    the whole batch. With tracing on, each call is a step span and its outputs carry
    the span's headers.
    """
    with CLOCK.timing("codec"):
        inputs = [_decode(spec, codec, message) for message in batch]
    calls = _Calls(spec, codec, batch, inputs)
    events = [e for e in inputs if isinstance(e, Event)]
    outcomes: list[list[Output] | PoisonInput]
    if inflight is not None and inflight.concurrency > 1:
        keyed = [(m.key(), e) for m, e in zip(batch, inputs, strict=True) if isinstance(e, Event)]
        outcomes = inflight.outcomes(calls.handle, keyed)
    else:
        with CLOCK.timing("handler"):
            handled = [call(calls.handler, event) for event in events]
        with CLOCK.timing("codec"):
            outcomes = [
                h if isinstance(h, PoisonInput) else calls.outputs_or_poison(e, h)
                for e, h in zip(events, handled, strict=True)
            ]
    if len(events) == len(batch) and all(type(o) is list for o in outcomes):
        return [output for outs in outcomes if type(outs) is list for output in outs], []
    results = iter(outcomes)
    outputs: list[Output] = []
    dead: list[str] = []
    for message, decoded in zip(batch, inputs, strict=True):
        outcome = decoded if isinstance(decoded, PoisonInput) else next(results)
        if isinstance(outcome, PoisonInput):
            letter = _dead_letter(spec, codec, message, outcome)
            outputs.append(Output(spec.dead_letter_topic, message.key(), letter))
            dead.append(type(outcome).__name__)
            continue
        outputs += outcome
    return outputs, dead


class _Calls:
    """The handler calls of one batch (step spans when tracing is on) and their outputs."""

    def __init__(
        self, spec: ServiceSpec, codec: Codec, batch: Sequence[Any], inputs: Sequence[Any]
    ) -> None:
        self._route = spec.route
        self._codec = codec
        self.handler: Handler = spec.handler
        self._traced: TracedHandler | None = None
        tracing = active_tracing()
        if tracing.enabled:
            messages = {
                id(e): m for m, e in zip(batch, inputs, strict=True) if isinstance(e, Event)
            }
            self.handler = self._traced = TracedHandler(tracing, spec.name, spec.handler, messages)

    def outputs(self, event: Event, produced: Sequence[Event]) -> list[Output]:
        """The records of the events the handler made of ``event``, encoded and routed."""
        headers = None
        if self._traced is not None:
            headers = record_headers(self._traced.carriers.get(id(event), {}))
        encode, route = self._codec.encode, self._route
        return [
            Output(topic, result.run_id.encode(), encode(result, topic), headers)
            for result in produced
            for topic in (route(result),)
        ]

    def outputs_or_poison(
        self, event: Event, produced: Sequence[Event]
    ) -> list[Output] | PoisonInput:
        try:
            return self.outputs(event, produced)
        except PoisonInput as exc:
            return exc

    def handle(self, event: Event) -> list[Output]:
        """One call and its outputs, each stage timed (for calls run several at once)."""
        with CLOCK.timing("handler"):
            produced = self.handler(event)
        with CLOCK.timing("codec"):
            return self.outputs(event, produced)


def _decode(spec: ServiceSpec, codec: Codec, message: Any) -> Event | PoisonInput:
    try:
        event = codec.decode(message.value(), message.topic())
    except PoisonInput as exc:
        return exc
    if not isinstance(event, spec.accepts):
        return PoisonInput(f"{type(event).__name__} is not an input of {spec.name}")
    return event


def _dead_letter(spec: ServiceSpec, codec: Codec, message: Any, exc: Exception) -> bytes:
    letter = dead_letter(message, exc, service=spec.name, producer=ProducerRef(service=spec.name))
    log.warning(
        "dead-lettered input: %s",
        exc,
        extra={
            "run_id": letter.run_id,
            "topic": message.topic(),
            "partition": message.partition(),
            "offset": message.offset(),
            "error_type": type(exc).__name__,
        },
    )
    return codec.encode(letter, spec.dead_letter_topic)


def next_offsets(batch: Sequence[Any]) -> list[TopicPartition]:
    """Per partition, the offset after the batch's last message: the progress to commit."""
    last: dict[tuple[str, int], int] = {}
    for m in batch:
        key = (m.topic() or "", m.partition() or 0)
        last[key] = max(m.offset() or 0, last.get(key, -1))
    return [TopicPartition(t, p, o + 1) for (t, p), o in last.items()]


def first_offsets(batch: Sequence[Any]) -> dict[tuple[str, int], int]:
    """Per partition, the batch's first offset: where a rewound batch is read again."""
    first: dict[tuple[str, int], int] = {}
    for m in batch:
        key = (m.topic() or "", m.partition() or 0)
        offset = m.offset() or 0
        first[key] = min(offset, first.get(key, offset))
    return first
