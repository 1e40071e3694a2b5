"""Events read as documents are exactly what their models give as JSON, or refused alike."""

from __future__ import annotations

import copy
import io
from typing import Any

import pytest
from fastavro import schemaless_reader, schemaless_writer

from tests.support.samples import sample, variants
from tracebound.client import new_request
from tracebound.codec import SingleObjectCodec, schemas
from tracebound.codec.documents import EventDoc, document, documented_events, iso, to_doc
from tracebound.errors import EventValidationError
from tracebound.events import EVENT_TYPES, DeadLetter, Event, ToolInvoked

CODEC = SingleObjectCodec()
HEADER = 10


def _record(event: Event) -> dict[str, Any]:
    parsed = schemas.current(event.schema_name).parsed
    record = schemaless_reader(io.BytesIO(CODEC.encode(event)[HEADER:]), parsed, None)
    assert isinstance(record, dict)
    return record


def _expected(event: Event) -> dict[str, Any]:
    """``to_json()``, but bytes (only a dead letter's key and value) stay bytes."""
    if not isinstance(event, DeadLetter):
        return event.to_json()
    return {
        **event.model_dump(mode="json", exclude={"key", "value"}),
        "key": event.key,
        "value": event.value,
    }


def test_every_catalog_event_is_read_without_its_model() -> None:
    assert documented_events() == list(EVENT_TYPES)


@pytest.mark.parametrize("name", list(EVENT_TYPES))
def test_a_document_is_the_models_json(name: str) -> None:
    for event in variants(EVENT_TYPES[name]):
        record = _record(event)
        kept = copy.deepcopy(record)
        doc = CODEC.decode_doc(CODEC.encode(event))
        assert doc == EventDoc(name, _expected(event))
        assert to_doc(name, record).data == doc.data
        assert record == kept  # the record read is left as it was
        assert document(event) == doc


def test_timestamps_are_written_as_pydantic_writes_them() -> None:
    event = new_request("why?", language="en", requested_by="test")
    doc = CODEC.decode_doc(CODEC.encode(event))
    assert doc.data["occurred_at"] == event.to_json()["occurred_at"] == iso(event.occurred_at)
    assert doc.data["occurred_at"].endswith("Z")
    assert doc.data["request"]["requested_at"] == event.to_json()["request"]["requested_at"]


def test_a_literal_out_of_range_is_a_validation_error() -> None:
    record = _record(new_request("why?", language="en", requested_by="test"))
    record["request"]["mode"] = "BATCH"
    with pytest.raises(EventValidationError, match="mode"):
        to_doc("DiagnosisRequested", record)


def test_json_text_that_does_not_parse_is_a_validation_error() -> None:
    event = sample(ToolInvoked)
    record = _record(event)
    record["tool_invocation"]["input_params"] = '{"cpu": '
    buf = io.BytesIO()
    schemaless_writer(buf, schemas.current("ToolInvoked").parsed, record)
    with pytest.raises(EventValidationError, match="input_params"):
        CODEC.decode_doc(CODEC.encode(event)[:HEADER] + buf.getvalue())
