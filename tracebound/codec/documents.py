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
import types
import typing
from collections.abc import Callable
from datetime import datetime
from functools import cache
from typing import Any, Literal, NamedTuple, get_args, get_origin

from fastavro import schemaless_reader, schemaless_writer
from pydantic import BaseModel, ValidationError

from tracebound.codec import fastpath, schemas
from tracebound.codec.fastpath import PLAIN_AVRO, Compiler, NotExact, load_json, one_of
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


def iso(moment: datetime) -> str:
    """A timestamp as pydantic writes it in JSON (``Z`` for UTC)."""
    text = moment.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


class DocCompiler(Compiler):
    """Converters from fastavro's records to documents, under one schema's named types."""

    def doc_convert(self, annotation: Any, avro: Any) -> Convert | None:
        """What turns fastavro's value into the field's JSON value (None: it already is)."""
        avro = self.resolve(avro)
        origin, args = get_origin(annotation), get_args(annotation)
        if annotation is None:  # a JSON field: text on the wire
            return load_json
        if origin in (typing.Union, types.UnionType) and type(None) in args and len(args) == 2:
            if not isinstance(avro, list) or len(avro) != 2 or "null" not in avro:
                raise NotExact(f"{annotation} is not a union with null in Avro")
            inner = self.doc_convert(
                next(a for a in args if a is not type(None)),
                next(a for a in avro if a != "null"),
            )
            return None if inner is None else _or_none(inner)
        if origin is Literal and all(isinstance(a, str) for a in args):
            return one_of(frozenset(args))
        if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
            item = self.doc_convert(args[0], avro["items"])
            return None if item is None else _list_of(item)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            return self.documenter(annotation, avro)
        if annotation is datetime:
            return iso
        # The builders' own compilation already proved the other types plain.
        if (origin is dict and args == (str, str)) or annotation in PLAIN_AVRO:
            return None
        raise NotExact(f"{annotation} has no JSON converter")

    def documenter(self, model: type[BaseModel], avro: Any) -> Convert:
        """The document of a record fastavro read (a new dict: the record stays as read)."""
        steps = [
            (name, convert)
            for name, annotation, field_avro in self.fields(model, avro)
            if (convert := self.doc_convert(annotation, field_avro)) is not None
        ]

        def build(record: dict[str, Any]) -> dict[str, Any]:
            values = dict(record)
            for name, convert in steps:
                values[name] = convert(values[name])
            return values

        return build


def _or_none(convert: Convert) -> Convert:
    return lambda value: None if value is None else convert(value)


def _list_of(convert: Convert) -> Convert:
    return lambda values: [convert(v) for v in values]


@cache
def _documenter(event: str) -> Convert | None:
    """The converter of ``event`` (None: its model validates), made once."""
    version = schemas.current(event)
    compiler = DocCompiler(version.parsed.get("__named_schemas", {}))
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


__all__ = ["DocCompiler", "EventDoc", "document", "documented_events", "iso", "to_doc"]
