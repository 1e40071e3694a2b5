"""The codec's fast path builds exactly the events full validation builds, or defers to it."""

from __future__ import annotations

import io
import random
from typing import Any

import pytest
from fastavro import schemaless_reader, schemaless_writer
from pydantic import BaseModel, Field, ValidationError, field_validator

from tests.support.samples import sample, variants
from tracebound.client import new_request
from tracebound.codec import SingleObjectCodec, fastpath, schemas
from tracebound.errors import EventValidationError, PoisonInput
from tracebound.events import EVENT_TYPES, Event, PlanProduced, Record, ToolInvoked

CODEC = SingleObjectCodec()
HEADER = 10


def _record(event: Event) -> dict[str, Any]:
    """What fastavro reads back from the encoded ``event``."""
    data = CODEC.encode(event)
    parsed = schemas.current(event.schema_name).parsed
    record = schemaless_reader(io.BytesIO(data[HEADER:]), parsed, None)
    assert isinstance(record, dict)
    return record


def _written(event_name: str, record: dict[str, Any]) -> bytes:
    buf = io.BytesIO()
    schemaless_writer(buf, schemas.current(event_name).parsed, record)
    return buf.getvalue()


def _same(fast: BaseModel, full: BaseModel) -> None:
    """Equal values, types, fields set and immutability, nested records included."""
    assert type(fast) is type(full)
    assert fast == full
    assert fast.model_fields_set == full.model_fields_set
    assert fast.model_dump() == full.model_dump()
    for name in type(full).model_fields:
        a, b = getattr(fast, name), getattr(full, name)
        assert type(a) is type(b), name
        if isinstance(b, BaseModel):
            _same(a, b)
        elif isinstance(b, tuple):
            for x, y in zip(a, b, strict=True):
                assert type(x) is type(y), name
                if isinstance(y, BaseModel):
                    _same(x, y)
    with pytest.raises(ValidationError):
        fast.__setattr__(next(iter(type(fast).model_fields)), None)


def test_every_catalog_event_takes_the_fast_path() -> None:
    # No model of the catalog checks more than fastavro's types and the literals:
    # if one gains a validator or a constraint, it leaves this list, and decoding
    # it validates in full again.
    assert fastpath.exact_events() == list(EVENT_TYPES)


@pytest.mark.parametrize("name", list(EVENT_TYPES))
def test_fast_path_builds_what_validation_builds(name: str) -> None:
    cls = EVENT_TYPES[name]
    for event in variants(cls):
        record = _record(event)
        full = cls.from_avro(record)
        fast = fastpath.to_event(name, record)
        _same(fast, full)
        assert fast == event
        assert _record(event) == record  # the record read is left as it was


@pytest.mark.parametrize("name", list(EVENT_TYPES))
def test_fast_encoding_writes_what_model_dump_writes(name: str) -> None:
    for event in variants(EVENT_TYPES[name]):
        assert _written(name, fastpath.to_record(event)) == _written(name, event.to_avro())


def test_requests_of_the_ingest_round_trip() -> None:
    event = new_request("why is checkout slow?", language="en", requested_by="test")
    record = _record(event)
    fast = fastpath.to_event("DiagnosisRequested", record)
    _same(fast, EVENT_TYPES["DiagnosisRequested"].from_avro(record))
    assert fast == event
    assert CODEC.decode(CODEC.encode(event)) == event


def test_a_literal_out_of_range_is_a_validation_error() -> None:
    event = new_request("why?", language="en", requested_by="test")
    record = _record(event)
    record["request"]["mode"] = "BATCH"
    with pytest.raises(EventValidationError, match="mode"):
        fastpath.to_event("DiagnosisRequested", record)
    with pytest.raises(ValidationError):
        EVENT_TYPES["DiagnosisRequested"].from_avro(record)


def test_json_text_that_does_not_parse_is_a_validation_error() -> None:
    record = _record(sample(ToolInvoked))
    record["tool_invocation"]["input_params"] = '{"cpu": '
    data = CODEC.encode(sample(ToolInvoked))[:HEADER] + _written("ToolInvoked", record)
    with pytest.raises(EventValidationError, match="input_params"):
        CODEC.decode(data)


def test_fast_path_and_validation_agree_on_corrupt_bodies() -> None:
    rng = random.Random(11)
    checked = 0
    for name, cls in EVENT_TYPES.items():
        data = CODEC.encode(sample(cls))
        parsed = schemas.current(name).parsed
        for _ in range(60):
            corrupt = bytearray(data)
            corrupt[rng.randint(HEADER, len(data) - 1)] ^= 1 << rng.randint(0, 7)
            try:
                record = schemaless_reader(io.BytesIO(bytes(corrupt[HEADER:])), parsed, None)
            except Exception:  # not readable: the codec raises DecodeError
                continue
            if not isinstance(record, dict):
                continue
            try:
                full: Event | None = cls.from_avro(record)
            except (ValidationError, ValueError):
                full = None
            if full is None:
                with pytest.raises(PoisonInput):
                    fastpath.to_event(name, record)
            else:
                _same(fastpath.to_event(name, record), full)
            checked += 1
    assert checked > 100


class _Checked(Record):
    count: int = Field(ge=0)


class _Validated(Record):
    name: str

    @field_validator("name")
    @classmethod
    def _strip(cls, value: str) -> str:
        return value.strip()


@pytest.mark.parametrize("model", [_Checked, _Validated])
def test_models_with_checks_of_their_own_are_not_built_unvalidated(
    model: type[BaseModel],
) -> None:
    field = next(iter(model.model_fields))
    avro = {"type": "record", "name": "x", "fields": [{"name": field, "type": "long"}]}
    if model is _Validated:
        avro["fields"] = [{"name": field, "type": "string"}]
    with pytest.raises(fastpath.NotExact):
        fastpath.Compiler({}).builder(model, avro)


def test_a_plan_without_its_optional_records() -> None:
    event = sample(PlanProduced)
    plan = event.plan.model_copy(update={"execution": None, "fallback": None})
    bare = event.model_copy(update={"plan": plan})
    record = _record(bare)
    _same(fastpath.to_event("PlanProduced", record), PlanProduced.from_avro(record))
