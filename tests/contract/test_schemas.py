"""The wire contract: schemas, models, topic table and their evolution."""

from __future__ import annotations

import copy
import io
import json
import typing
from typing import Any, get_args, get_origin

import pytest
from fastavro import schemaless_writer
from fastavro.schema import fingerprint

from tests.support.samples import sample
from tracebound.codec import SingleObjectCodec, compat, schemas
from tracebound.events import EVENT_TYPES, Event, Record
from tracebound.topics import topic_for, topic_table

EVENTS = sorted(EVENT_TYPES)


def test_eleven_events_each_with_schema_model_and_topic() -> None:
    assert len(EVENT_TYPES) == 11
    assert {t.event for t in topic_table()} == set(EVENT_TYPES)
    for name, cls in EVENT_TYPES.items():
        assert schemas.schema_path(name).is_file()
        assert topic_for(name) == cls.topic
    for spec in topic_table():
        assert spec.config["retention.ms"] == "-1", f"{spec.name} must keep history"


def _avro_kind(avro_type: Any) -> tuple[bool, Any]:
    """(nullable, non-null type) of an Avro field type."""
    if isinstance(avro_type, list):
        rest = [t for t in avro_type if t != "null"]
        assert len(rest) == 1, f"only [null, T] unions are used: {avro_type}"
        return True, rest[0]
    return False, avro_type


def _mirror(avro: dict[str, Any], model: type[Record], path: str) -> None:
    hints = typing.get_type_hints(model, include_extras=True)
    avro_fields = [f["name"] for f in avro["fields"]]
    assert avro_fields == list(model.model_fields), f"{path}: field names/order differ"
    for field in avro["fields"]:
        name = field["name"]
        nullable, avro_type = _avro_kind(field["type"])
        hint = hints[name]
        origin = get_origin(hint)
        args = [a for a in get_args(hint) if a is not type(None)]
        if nullable and field.get("tracebound.json") is None:
            assert type(None) in get_args(hint), f"{path}.{name}: Avro nullable, model not"
            hint = args[0]
            origin = get_origin(hint)
            args = list(get_args(hint))
        if field.get("tracebound.json"):
            assert origin is typing.Annotated, f"{path}.{name}: JSON field must be JsonValue"
            continue
        if isinstance(avro_type, dict) and avro_type["type"] == "record":
            _mirror(avro_type, hint, f"{path}.{name}")
        elif isinstance(avro_type, dict) and avro_type["type"] == "array":
            assert origin is tuple, f"{path}.{name}: Avro array needs a tuple"
            items = avro_type["items"]
            if isinstance(items, dict) and items.get("type") == "record":
                _mirror(items, args[0], f"{path}.{name}[]")
        elif isinstance(avro_type, dict) and avro_type["type"] == "map":
            assert origin is dict, f"{path}.{name}: Avro map needs a dict"


@pytest.mark.parametrize("event", EVENTS)
def test_model_mirrors_schema(event: str) -> None:
    _mirror(schemas.current(event).expanded, EVENT_TYPES[event], event)


@pytest.mark.parametrize("event", EVENTS)
def test_event_round_trips_through_the_codec(event: str) -> None:
    codec = SingleObjectCodec()
    original: Event = sample(EVENT_TYPES[event])
    data = codec.encode(original)
    assert data[:2] == b"\xc3\x01"
    assert data[2:10] == schemas.current(event).fingerprint
    assert codec.decode(data) == original


@pytest.mark.parametrize("event", EVENTS)
def test_fingerprint_is_crc64_avro_of_the_canonical_form(event: str) -> None:
    version = schemas.current(event)
    assert version.fingerprint.hex() == fingerprint(version.canonical, "CRC-64-AVRO")


@pytest.mark.parametrize("event", EVENTS)
def test_working_copy_is_frozen(event: str) -> None:
    past = schemas.history(event)
    assert past, f"{event} has no frozen version: run `tracebound schemas freeze`"
    assert past[-1].canonical == schemas.current(event).canonical, (
        f"{event} changed since v{past[-1].version}: run `tracebound schemas freeze`"
    )


@pytest.mark.parametrize("event", EVENTS)
def test_full_transitive_against_every_frozen_version(event: str) -> None:
    past = [(v.version or 0, v.expanded) for v in schemas.history(event)]
    assert compat.check_full_transitive(schemas.current(event).expanded, past, event) == []


@pytest.mark.parametrize("event", EVENTS)
def test_every_frozen_version_still_decodes(event: str) -> None:
    """Data written with any frozen writer schema is read into today's model."""

    original = sample(EVENT_TYPES[event])
    for version in schemas.history(event):
        buf = io.BytesIO()
        buf.write(b"\xc3\x01" + version.fingerprint)
        schemaless_writer(buf, version.parsed, original.to_avro())
        assert SingleObjectCodec().decode(buf.getvalue()).run_id == original.run_id


def _with_field(schema: dict[str, Any], field: dict[str, Any]) -> dict[str, Any]:
    changed = copy.deepcopy(schema)
    changed["fields"].append(field)
    return changed


def test_new_field_without_default_is_rejected() -> None:
    current = schemas.current("Verdict").expanded
    broken = _with_field(current, {"name": "severity_v2", "type": "string"})
    problems = compat.check_full_transitive(broken, [(1, current)], "Verdict")
    assert [p.direction for p in problems] == ["backward"]


def test_new_field_with_default_is_accepted() -> None:
    current = schemas.current("Verdict").expanded
    fine = _with_field(current, {"name": "note", "type": ["null", "string"], "default": None})
    assert compat.check_full_transitive(fine, [(1, current)], "Verdict") == []


def test_type_change_and_removed_required_field_are_rejected() -> None:
    current = schemas.current("Answer").expanded
    retyped = copy.deepcopy(current)
    for f in retyped["fields"]:
        if f["name"] == "latency_ms":
            f["type"] = "string"
    removed = copy.deepcopy(current)
    removed["fields"] = [f for f in removed["fields"] if f["name"] != "user_facing_answer"]
    assert compat.check_full_transitive(retyped, [(1, current)], "Answer")
    problems = compat.check_full_transitive(removed, [(1, current)], "Answer")
    assert [p.direction for p in problems] == ["forward"]


def test_history_files_are_valid_json_records() -> None:
    for event in EVENTS:
        for version in schemas.history(event):
            assert version.expanded["type"] == "record"
            assert version.expanded["name"].endswith(event)
            json.dumps(version.expanded)
