"""Lenient JSON extraction and strict model validation of model replies; never a crash."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict

from tracebound.llm import parse_json_object, parse_model


class VerdictOut(BaseModel):
    model_config = ConfigDict(extra="forbid")

    verdict: str
    groundedness_score: float


@pytest.mark.parametrize(
    "text",
    [
        '{"verdict": "PASS", "groundedness_score": 1.0}',
        '```json\n{"verdict": "PASS", "groundedness_score": 1.0}\n```',
        '```\n{"verdict": "PASS", "groundedness_score": 1.0}\n```',
        'Here is the result:\n{"verdict": "PASS", "groundedness_score": 1.0}\nDone.',
        'Result: ```json {"verdict": "PASS", "groundedness_score": 1.0}``` end',
        'I think {not json} but then {"verdict": "PASS", "groundedness_score": 1.0}',
    ],
)
def test_valid_variants(text: str) -> None:
    outcome = parse_json_object(text)
    assert outcome.status == "valid", outcome.detail
    assert outcome.value == {"verdict": "PASS", "groundedness_score": 1.0}


@pytest.mark.parametrize("text", [None, "", "   \n", "The CPU is fine, no JSON here."])
def test_missing(text: str | None) -> None:
    outcome = parse_json_object(text)
    assert outcome.status == "missing"
    assert outcome.value is None


@pytest.mark.parametrize(
    "text",
    [
        '{"verdict": "PASS", "groundedness_score": }',
        '```json\n{"claims": [\n```',
        "{'single': 'quotes'}",
        "[1, 2, 3] {",
        "{" * 5000,
    ],
)
def test_invalid(text: str) -> None:
    outcome = parse_json_object(text)
    assert outcome.status == "invalid"
    assert outcome.value is None
    assert outcome.detail


def test_top_level_array_is_not_an_object() -> None:
    assert parse_json_object("[1, 2]").status == "invalid"
    outcome = parse_json_object('[{"a": 1}]')
    assert outcome.status == "invalid"
    assert "list" in outcome.detail


def test_parse_model_valid() -> None:
    fenced = '```json\n{"verdict": "PASS", "groundedness_score": 0.5}```'
    outcome, value = parse_model(fenced, VerdictOut)
    assert outcome.ok
    assert value == VerdictOut(verdict="PASS", groundedness_score=0.5)
    assert outcome.as_record().status == "valid"


def test_parse_model_schema_mismatch_is_invalid_with_detail() -> None:
    outcome, value = parse_model('{"verdict": "PASS", "extra": 1}', VerdictOut)
    assert value is None
    assert outcome.status == "invalid"
    assert "groundedness_score" in outcome.detail
    assert outcome.value == {"verdict": "PASS", "extra": 1}


def test_parse_model_passes_through_missing() -> None:
    outcome, value = parse_model("no json", VerdictOut)
    assert (outcome.status, value) == ("missing", None)
