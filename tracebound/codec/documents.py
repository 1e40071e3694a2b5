"""Events as JSON documents, read straight from fastavro's records without building models.

A reader that only looks at an event's fields, such as a projection folding
thousands of events a second, has no use for the pydantic model: building it,
then dumping it back to JSON values, cost more than reading the Avro bytes. An
:class:`EventDoc` is the event's name and the document ``Event.to_json()`` gives
(JSON fields parsed, timestamps as ISO text, arrays as lists; bytes, which only a
dead letter carries, stay bytes), made from the
record fastavro read by a converter compiled once per event type, with the same
checks as the model builders of :mod:`tracebound.codec.fastpath` (literals
against their values, JSON text that parses). A record a converter cannot take is
validated as a model in full, so an invalid event raises the same
``EventValidationError``; an event type whose model checks more than a converter
could gets no converter and always goes through its model.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from functools import cache
from typing import Any, NamedTuple

from fastavro import schemaless_reader, schemaless_writer
from pydantic import ValidationError

from tracebound.codec import fastpath, schemas
from tracebound.codec.fastpath import Compiler, NotExact, iso
from tracebound.errors import EventValidationError
from tracebound.events import EVENT_TYPES, Event

Convert = Callable[[Any], Any]


class EventDoc(NamedTuple):
    """One event: its schema name and its fields as JSON values."""

    name: str
    data: dict[str, Any]


def document(event: Event) -> EventDoc:
    """The document of an event model: what a decoder gives for its bytes."""
    version = schemas.current(event.schema_name)
    buf = io.BytesIO()
    schemaless_writer(buf, version.parsed, fastpath.to_record(event))
    buf.seek(0)
    record = schemaless_reader(buf, version.parsed, None)
    assert isinstance(record, dict)
    return to_doc(event.schema_name, record)


@cache
def _documenter(event: str) -> Convert | None:
    """The converter of ``event`` (None: its model validates), made once."""
    version = schemas.current(event)
    compiler = Compiler(version.parsed.get("__named_schemas", {}), documents=True)
    try:
        return compiler.documenter(EVENT_TYPES[event], version.parsed)
    except NotExact:
        return None


def to_doc(event: str, record: dict[str, Any]) -> EventDoc:
    """The document of a record read by fastavro; ``EventValidationError`` if invalid."""
    convert = _documenter(event)
    if convert is not None:
        try:
            return EventDoc(event, convert(record))
        except (ValueError, TypeError, KeyError):
            pass  # the full validation below says what is wrong
    try:
        return EventDoc(event, EVENT_TYPES[event].from_avro(record).to_json())
    except (ValidationError, ValueError) as exc:
        raise EventValidationError(f"{event} fails validation: {exc}") from exc


def documented_events() -> list[str]:
    """The events read into documents without a model."""
    return [event for event in EVENT_TYPES if _documenter(event) is not None]


__all__ = ["EventDoc", "document", "documented_events", "iso", "to_doc"]
