"""The span of one role step: an input record handled into the run's next events.

The service loop wraps its handler only while tracing is on. Each call continues
the trace its input record carries, runs the handler inside the step's span (on
the handler's own thread, so model and tool calls nest below it) and leaves the
span's W3C headers for the loop to put on every record that step produced.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tracebound.events import Event
from tracebound.tracing import Attributes, Tracing
from tracebound.tracing.context import Carrier, carrier_of

MAX_ID = 64  # run ids are UUIDs; anything longer is cut, never logged whole
# Output fields that are enumerations, safe to put on a span as they are.
RESULT_FIELDS = ("verdict", "final_status", "verifier_mode")
MAX_VALUE = 40


def input_attributes(role: str, event: Event, message: Any) -> dict[str, str | int | bool]:
    """What the step consumed: role, run, event type and the record's position."""
    attributes: dict[str, str | int | bool] = {
        "tracebound.role": role,
        "tracebound.run_id": event.run_id[:MAX_ID],
        "tracebound.input": type(event).__name__,
        "messaging.system": "kafka",
        "messaging.destination.name": message.topic() or "",
        "messaging.kafka.partition": message.partition() or 0,
        "messaging.kafka.offset": message.offset() or 0,
    }
    request = getattr(event, "request", None)
    if request is not None:
        attributes["tracebound.mode"] = request.mode
    round_no = getattr(event, "round", None)
    if isinstance(round_no, int):
        attributes["tracebound.round"] = round_no
    return attributes


def result_attributes(results: Sequence[Event]) -> Attributes:
    """What the step produced: its event types and the enumerations they decide."""
    attributes: dict[str, str | int | bool] = {
        "tracebound.outputs": ",".join(type(e).__name__ for e in results)[:200]
    }
    for event in results:
        for name in RESULT_FIELDS:
            value = getattr(event, name, None)
            if isinstance(value, str) and value and len(value) <= MAX_VALUE:
                attributes[f"tracebound.{name}"] = value
    return attributes


class TracedHandler:
    """A role handler whose every call is one step span; see the module docstring.

    ``messages`` maps ``id(event)`` to the record it was decoded from, and
    :attr:`carriers` gets, under the same key, the headers for the step's outputs.
    """

    def __init__(
        self,
        tracing: Tracing,
        role: str,
        handler: Any,
        messages: Mapping[int, Any],
    ) -> None:
        self._tracing, self._role, self._handler = tracing, role, handler
        self._messages = messages
        self.carriers: dict[int, Carrier] = {}

    def __call__(self, event: Event) -> Sequence[Event]:
        message = self._messages[id(event)]
        parent = carrier_of(message.headers())
        attributes = input_attributes(self._role, event, message)
        with self._tracing.step(f"{self._role} step", parent, attributes) as span:
            results = list(self._handler(event))
            span.set(result_attributes(results))
            self.carriers[id(event)] = span.carrier()
        return results


__all__ = ["TracedHandler", "input_attributes", "result_attributes"]
