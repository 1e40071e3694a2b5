"""Event models from fastavro's records and back, without checking twice what Avro typed.

fastavro reads a record of the reader schema with every field present and
typed: ``string`` is ``str``, ``long`` is ``int``, ``timestamp-millis`` an aware
UTC ``datetime``, an array a list. For most fields the pydantic model adds
nothing to that, so validating the record again only costs time. Per event type
this module compiles, once, a builder that makes the model directly: arrays
become tuples, nested records their models, JSON text is parsed and literals
are checked against their values. A model whose checks it cannot reproduce
exactly (validators, constraints, aliases, a type it does not know, a field the
schema lacks) gets no builder and is validated as before. When a builder meets a
value it cannot take (a literal out of range, JSON that does not parse), the
record is validated in full, so invalid input raises the same
``EventValidationError`` and is dead-lettered as before.

Encoding is the mirror: the dict fastavro writes, built from the model's values
with JSON fields dumped to text and nested records as dicts. A value of a union
with null is given in fastavro's ``(branch name, value)`` notation: fastavro
otherwise validates the value against each branch to pick one, which for a
nested record means checking the whole record once more.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable
from datetime import datetime
from functools import cache
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel, ValidationError

from tracebound import fastjson
from tracebound.codec import schemas
from tracebound.errors import EventValidationError
from tracebound.events import EVENT_TYPES, Event
from tracebound.events.base import is_json_field

Convert = Callable[[Any], Any]
Build = Callable[[dict[str, Any]], Any]
Dump = Callable[[Any], dict[str, Any]]
# Avro types fastavro reads as exactly the Python type a field of that type holds.
PLAIN_AVRO: dict[type, tuple[str, ...]] = {
    str: ("string", "enum"),
    int: ("int", "long"),
    bool: ("boolean",),
    float: ("float", "double"),
    bytes: ("bytes",),
}
_set = object.__setattr__
_TIMESTAMP = {"type": "long", "logicalType": "timestamp-millis"}


class NotExact(Exception):
    """The model checks something a builder would not (or the schema does not match)."""


def _avro_kind(avro: Any) -> str:
    if isinstance(avro, dict):
        return str(avro["type"]) if "logicalType" not in avro else ""
    return avro if isinstance(avro, str) else ""


class Compiler:
    """Builders and dumpers of one event's records, under its schema's named types;
    with ``documents``, its converters make JSON documents instead of models
    (:mod:`tracebound.codec.documents`)."""

    def __init__(self, named: dict[str, Any], *, documents: bool = False) -> None:
        self._named = named
        self._documents = documents

    def resolve(self, avro: Any) -> Any:
        return self._named.get(avro, avro) if isinstance(avro, str) else avro

    def fields(self, model: type[BaseModel], avro: Any) -> list[tuple[str, Any, Any]]:
        """(name, annotation, Avro type) per field; NotExact unless the two agree exactly."""
        avro = self.resolve(avro)
        if not isinstance(avro, dict) or avro.get("type") != "record":
            raise NotExact(f"{model.__name__} is not an Avro record")
        decorators = model.__pydantic_decorators__
        if (
            decorators.validators
            or decorators.field_validators
            or decorators.root_validators
            or decorators.model_validators
            or decorators.field_serializers
            or decorators.model_serializers
            or model.__pydantic_post_init__ is not None
            or model.__pydantic_root_model__
            or model.__private_attributes__
            or model.model_config.get("extra") == "allow"
        ):
            raise NotExact(f"{model.__name__} has validators, serializers or state of its own")
        avro_fields = {f["name"]: f["type"] for f in avro["fields"]}
        if list(avro_fields) != list(model.model_fields):
            raise NotExact(f"{model.__name__} fields differ from (or are ordered unlike) Avro's")
        hints = typing.get_type_hints(model)
        out = []
        for name, info in model.model_fields.items():
            if info.alias is not None or (info.metadata and not is_json_field(info)):
                raise NotExact(f"{model.__name__}.{name} has an alias or constraints")
            out.append((name, hints[name] if not is_json_field(info) else None, avro_fields[name]))
        return out

    # -- decoding ----------------------------------------------------------------------

    def convert(self, annotation: Any, avro: Any) -> Convert | None:  # noqa: C901, PLR0911, PLR0912  # a dispatch on the annotation's shape
        """What turns fastavro's value into the field's (None: it already is)."""
        avro = self.resolve(avro)
        origin, args = get_origin(annotation), get_args(annotation)
        if annotation is None:  # a JSON field: text on the wire
            return load_json
        if origin in (typing.Union, types.UnionType) and type(None) in args and len(args) == 2:
            if not isinstance(avro, list) or len(avro) != 2 or "null" not in avro:
                raise NotExact(f"{annotation} is not a union with null in Avro")
            inner = self.convert(
                next(a for a in args if a is not type(None)),
                next(a for a in avro if a != "null"),
            )
            return None if inner is None else _or_none(inner)
        if origin is Literal and all(isinstance(a, str) for a in args):
            if _avro_kind(avro) not in ("string", "enum"):
                raise NotExact(f"{annotation} is not an Avro string")
            return one_of(frozenset(args))
        if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
            if _avro_kind(avro) != "array":
                raise NotExact(f"{annotation} is not an Avro array")
            item = self.convert(args[0], avro["items"])
            if self._documents:  # fastavro's list is the JSON array
                return None if item is None else _list_of(item)
            return tuple if item is None else _tuple_of(item)
        if origin is dict and args == (str, str):
            if _avro_kind(avro) != "map" or avro["values"] != "string":
                raise NotExact(f"{annotation} is not an Avro map of strings")
            return None
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            if self._documents:  # fastavro's dict is the document when nothing converts
                return self.documenter(annotation, avro) if self._steps(annotation, avro) else None
            return self.builder(annotation, avro)
        if annotation is datetime and avro == _TIMESTAMP:
            return iso if self._documents else None
        if annotation in PLAIN_AVRO and _avro_kind(avro) in PLAIN_AVRO[annotation]:
            return None
        raise NotExact(f"{annotation} from Avro {avro} is not known to be exact")

    def _steps(self, model: type[BaseModel], avro: Any) -> list[tuple[str, Convert]]:
        """The fields of ``model`` whose values fastavro's need converting, and how."""
        return [
            (name, convert)
            for name, annotation, field_avro in self.fields(model, avro)
            if (convert := self.convert(annotation, field_avro)) is not None
        ]

    def builder(self, model: type[BaseModel], avro: Any) -> Build:
        """The model of a record fastavro read, built without validating it again."""
        steps = self._steps(model, avro)
        new, names = model.__new__, set(model.model_fields)

        def build(record: dict[str, Any]) -> Any:
            values = dict(record)  # fastavro's record stays as read, for a full validation
            for name, convert in steps:
                values[name] = convert(values[name])
            # What ``model_construct`` does for a model without aliases, defaults to
            # fill in, extra fields, private attributes or a post-init hook.
            built = new(model)
            _set(built, "__dict__", values)
            _set(built, "__pydantic_fields_set__", names.copy())
            _set(built, "__pydantic_extra__", None)
            _set(built, "__pydantic_private__", None)
            return built

        return build

    def documenter(self, model: type[BaseModel], avro: Any) -> Convert:
        """The JSON document of a record fastavro read (a new dict: the record stays as
        read); its nested records are documents too."""
        steps = self._steps(model, avro)

        def build(record: dict[str, Any]) -> dict[str, Any]:
            values = dict(record)
            for name, convert in steps:
                values[name] = convert(values[name])
            return values

        return build

    # -- encoding ----------------------------------------------------------------------

    def dump_convert(self, annotation: Any, avro: Any) -> Convert | None:
        """What turns a field's value into the one fastavro writes (None: it already is)."""
        avro = self.resolve(avro)
        if annotation is None:
            return _dump_json
        origin, args = get_origin(annotation), get_args(annotation)
        if origin in (typing.Union, types.UnionType) and type(None) in args and len(args) == 2:
            branch = next(a for a in avro if a != "null")
            inner = self.dump_convert(next(a for a in args if a is not type(None)), branch)
            return _branch(_branch_name(branch), inner)
        if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
            item = self.dump_convert(args[0], avro["items"])
            return None if item is None else _list_of(item)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            return self.dumper(annotation, avro)
        return None

    def dumper(self, model: type[BaseModel], avro: Any) -> Dump:
        """The dict fastavro writes for a record: the model's values, converted."""
        steps = [
            (name, convert)
            for name, annotation, field_avro in self.fields(model, avro)
            if (convert := self.dump_convert(annotation, field_avro)) is not None
        ]

        def dump(record: Any) -> dict[str, Any]:
            values = dict(record.__dict__)
            for name, convert in steps:
                values[name] = convert(values[name])
            return values

        return dump


def iso(moment: datetime) -> str:
    """A timestamp as pydantic writes it in JSON (``Z`` for UTC)."""
    text = moment.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def load_json(value: Any) -> Any:
    return fastjson.loads(value) if isinstance(value, str) else value


def _dump_json(value: Any) -> Any:
    return None if value is None else fastjson.dumps(value)


def _or_none(convert: Convert) -> Convert:
    return lambda value: None if value is None else convert(value)


def _branch_name(avro: Any) -> str:
    """How fastavro names a union's branch in its ``(name, value)`` notation."""
    if isinstance(avro, dict):
        kind = str(avro["type"])
        return str(avro["name"]) if kind in ("record", "enum", "fixed", "error") else kind
    return str(avro)


def _branch(name: str, convert: Convert | None) -> Convert:
    """A value of a union with null, its branch named: fastavro then writes it without
    validating it against each branch first (the model already holds that type)."""
    if convert is None:
        return lambda value: None if value is None else (name, value)
    return lambda value: None if value is None else (name, convert(value))


def _tuple_of(convert: Convert) -> Convert:
    return lambda values: tuple([convert(v) for v in values])


def _list_of(convert: Convert) -> Convert:
    return lambda values: [convert(v) for v in values]


def one_of(allowed: frozenset[str]) -> Convert:
    def check(value: Any) -> Any:
        if value not in allowed:
            raise ValueError(f"{value!r} is none of {sorted(allowed)}")
        return value

    return check


@cache
def _compiled(event: str) -> tuple[Build | None, Dump]:
    """The builder (None: the model validates) and the dumper of ``event``, made once."""
    version = schemas.current(event)
    compiler = Compiler(version.parsed.get("__named_schemas", {}))
    model = EVENT_TYPES[event]
    try:
        build: Build | None = compiler.builder(model, version.parsed)
    except NotExact:
        build = None
    try:
        dump = compiler.dumper(model, version.parsed)
    except NotExact:
        dump = Event.to_avro
    return build, dump


def exact_events() -> list[str]:
    """The events whose records are built without validation."""
    return [event for event in EVENT_TYPES if _compiled(event)[0] is not None]


def to_event(event: str, record: dict[str, Any]) -> Event:
    """The ``event`` model of a record read by fastavro; ``EventValidationError`` if invalid."""
    build = _compiled(event)[0]
    if build is not None:
        try:
            built: Event = build(record)
            return built
        except (ValueError, TypeError, KeyError):
            pass  # the full validation below says what is wrong, as it always did
    try:
        return EVENT_TYPES[event].from_avro(record)
    except (ValidationError, ValueError) as exc:
        raise EventValidationError(f"{event} fails validation: {exc}") from exc


def to_record(event: Event) -> dict[str, Any]:
    """The dict fastavro writes for ``event``: the bytes of ``Event.to_avro``, without pydantic
    (union values name their branch)."""
    return _compiled(event.schema_name)[1](event)


__all__ = ["Compiler", "NotExact", "exact_events", "to_event", "to_record"]
