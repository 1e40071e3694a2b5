"""One batch of the service loop without Kafka: its outputs, its offsets, its start.

The handler's results are encoded and routed here, and an input the role cannot
process becomes a dead letter in the same list, so the loop only has to publish
the list and the batch's offsets in one transaction.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from confluent_kafka import TopicPartition

from tracebound.codec import Codec
from tracebound.errors import HandlerCrashed, OutputTooLarge, PoisonInput
from tracebound.events import Event
from tracebound.events import Producer as ProducerRef
from tracebound.runtime.dead_letters import dead_letter
from tracebound.runtime.inflight import InFlight, call
from tracebound.runtime.service import AnyHandler, ServiceSpec
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


# librdkafka's default ``message.max.bytes``; a record must also leave room for its
# key, headers and framing.
MAX_RECORD_BYTES = 1_000_000
RECORD_MARGIN = 4096

Coordinates = tuple[str, int, int]


def coordinates(message: Any) -> Coordinates:
    """``(topic, partition, offset)``: where an input is, the same on every read."""
    return (message.topic() or "", message.partition() or 0, message.offset() or 0)


@dataclass
class Limits:
    """What makes an input poison beyond decoding: its outputs' size, a repeated crash.

    ``suspects`` are the inputs whose handler raised once already (the loop adds
    them); a second crash on one of them dead-letters it.
    """

    max_record_bytes: int = MAX_RECORD_BYTES
    suspects: set[Coordinates] = field(default_factory=set)


class CrashedOnce(Exception):
    """The handler raised on inputs not seen crashing before: read the batch again once."""

    def __init__(self, crashed: list[tuple[Coordinates, HandlerCrashed]]) -> None:
        super().__init__(crashed[0][1])
        self.crashed = crashed


def transform(
    spec: ServiceSpec,
    codec: Codec,
    batch: Sequence[Any],
    inflight: InFlight | None = None,
    limits: Limits | None = None,
) -> tuple[list[Output], list[str]]:
    """The encoded outputs of ``batch``, and the error type of each dead-lettered input.

    With one call at a time the handler runs over the whole batch, then its results
    are encoded, each stage timed once per batch. With several in flight the calls run
    on ``inflight``, each encoding its own outputs as it finishes (that CPU overlaps
    the other calls' waits). Either way the outputs keep the order of the inputs. A
    ``TransientError`` of the handler (or of the codec) propagates: the loop retries
    the whole batch. With tracing on, each call is a step span and its outputs carry
    the span's headers.

    An input is dead-lettered, with the role's failure outputs for its run
    (``spec.on_poison``), when it cannot be decoded, when an output would exceed
    ``limits.max_record_bytes``, or when its handler raised on it a second time;
    a first crash raises :class:`CrashedOnce` so the loop reads the batch again.
    """
    limits = limits or Limits()
    with CLOCK.timing("codec"):
        inputs = [_decode(spec, codec, message) for message in batch]
    calls = _Calls(spec, codec, batch, inputs, limits.max_record_bytes - RECORD_MARGIN)
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
    paired = [
        (message, decoded, decoded if isinstance(decoded, PoisonInput) else next(results))
        for message, decoded in zip(batch, inputs, strict=True)
    ]
    first_crashes = [
        (coordinates(m), o)
        for m, _, o in paired
        if isinstance(o, HandlerCrashed) and coordinates(m) not in limits.suspects
    ]
    if first_crashes:
        raise CrashedOnce(first_crashes)
    outputs: list[Output] = []
    dead: list[str] = []
    for message, decoded, outcome in paired:
        if isinstance(outcome, PoisonInput):
            letter = _dead_letter(spec, codec, message, outcome)
            outputs.append(Output(spec.dead_letter_topic, message.key(), letter))
            dead.append(type(outcome).__name__)
            if isinstance(decoded, Event):
                outputs += calls.failure_outputs(decoded, outcome)
            continue
        outputs += outcome
    return outputs, dead


class _Calls:
    """The handler calls of one batch (step spans when tracing is on) and their outputs."""

    def __init__(
        self,
        spec: ServiceSpec,
        codec: Codec,
        batch: Sequence[Any],
        inputs: Sequence[Any],
        max_value_bytes: int,
    ) -> None:
        self._route = spec.route
        self._codec = codec
        self._on_poison = spec.on_poison
        self._max_value_bytes = max_value_bytes
        self.handler: AnyHandler = spec.handler
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
        encode, route, limit = self._codec.encode, self._route, self._max_value_bytes
        outputs = [
            Output(topic, result.run_id.encode(), encode(result, topic), headers)
            for result in produced
            for topic in (route(result),)
        ]
        for output, result in zip(outputs, produced, strict=True):
            if len(output.value) > limit:
                raise OutputTooLarge(
                    f"its {type(result).__name__} output of {len(output.value):,} bytes"
                    f" exceeds the record limit of {limit:,} bytes"
                )
        return outputs

    def failure_outputs(self, event: Event, reason: PoisonInput) -> list[Output]:
        """The role's outputs for a run whose input was dead-lettered (none when too large)."""
        if self._on_poison is None:
            return []
        try:
            return self.outputs(event, self._on_poison(event, f"{type(reason).__name__}: {reason}"))
        except Exception:  # the failure path must never fail the batch
            log.exception("no failure output for run %s", event.run_id)
            return []

    def outputs_or_poison(
        self, event: Event, produced: Sequence[Event]
    ) -> list[Output] | PoisonInput:
        return call(lambda e: self.outputs(e, produced), event)

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
