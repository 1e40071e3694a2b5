"""Codec failure modes: every bad input raises a typed error the runtime dead-letters."""

from __future__ import annotations

import random

import pytest

from tests.support.samples import sample
from tracebound.codec import SingleObjectCodec
from tracebound.errors import DecodeError, EventValidationError, PoisonInput, UnknownSchemaError
from tracebound.events import AVRO_CONTEXT, Answer, DiagnosisRequested, ToolInvoked

CODEC = SingleObjectCodec()


def test_random_bytes_raise_decode_error() -> None:
    rng = random.Random(3)
    for _ in range(200):
        with pytest.raises(DecodeError):
            CODEC.decode(rng.randbytes(rng.randint(0, 300)))


def test_corrupt_bodies_raise_poison_input() -> None:
    data = CODEC.encode(sample(Answer))
    rng = random.Random(5)
    rejected = 0
    for _ in range(300):
        cut = rng.randint(10, len(data) - 1)
        corrupt = bytearray(data)
        corrupt[cut] ^= 0xFF
        try:
            decoded = CODEC.decode(bytes(corrupt))
        except PoisonInput:
            rejected += 1
            continue
        # A flipped byte inside a string can still be a valid record; never anything else.
        assert isinstance(decoded, Answer)
    assert rejected > 100


def test_truncated_and_trailing_bytes_are_rejected() -> None:
    data = CODEC.encode(sample(DiagnosisRequested))
    with pytest.raises(DecodeError):
        CODEC.decode(data[:-3])
    with pytest.raises(DecodeError, match="trailing"):
        CODEC.decode(data + b"\x00")


def test_unknown_fingerprint() -> None:
    data = CODEC.encode(sample(DiagnosisRequested))
    with pytest.raises(UnknownSchemaError):
        CODEC.decode(data[:2] + b"\x01" * 8 + data[10:])


def test_record_failing_model_validation() -> None:
    event = sample(DiagnosisRequested)
    bad = event.model_copy(update={"request": event.request.model_copy(update={"mode": "X"})})
    with pytest.raises(EventValidationError):
        CODEC.decode(CODEC.encode(bad))


def test_json_fields_are_text_on_the_wire_and_data_in_python() -> None:
    event = sample(ToolInvoked)
    wire = event.to_avro()["tool_invocation"]
    assert isinstance(wire["output"], str)
    assert isinstance(event.tool_invocation.output, dict)
    assert event.model_dump(context=AVRO_CONTEXT)["tool_invocation"]["input_params"].startswith("{")
    assert CODEC.decode(CODEC.encode(event)) == event
