"""Lenient JSON extraction and strict model validation of model replies; never a crash."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict

from tracebound.llm import parse_json_object, parse_model


class VerdictOut(BaseModel):
    model_config = ConfigDict(extra="forbid")

    verdict: str
    groundedness_score: float


def test_exact_object_is_valid() -> None:
    outcome = parse_json_object(' {"verdict": "PASS", "groundedness_score": 1.0}\n')
    assert (outcome.status, outcome.ok) == ("valid", True)


@pytest.mark.parametrize(
    "text",
    [
        '```json\n{"verdict": "PASS", "groundedness_score": 1.0}\n```',
        '```\n{"verdict": "PASS", "groundedness_score": 1.0}\n```',
        'Here is the result:\n{"verdict": "PASS", "groundedness_score": 1.0}\nDone.',
        'Result: ```json {"verdict": "PASS", "groundedness_score": 1.0}``` end',
        'I think {not json} but then {"verdict": "PASS", "groundedness_score": 1.0}',
    ],
)
def test_wrapped_variants_are_repaired_not_valid(text: str) -> None:
    outcome = parse_json_object(text)
    assert outcome.status == "repaired", outcome.detail
    assert outcome.ok
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
    assert outcome.as_record().status == "repaired"
    assert "fenced" in outcome.detail and outcome.as_record().usable
    exact, _ = parse_model('{"verdict": "PASS", "groundedness_score": 0.5}', VerdictOut)
    assert exact.as_record().status == "valid"


def test_parse_model_schema_mismatch_is_invalid_with_detail() -> None:
    outcome, value = parse_model('{"verdict": "PASS", "extra": 1}', VerdictOut)
    assert value is None
    assert outcome.status == "invalid"
    assert "groundedness_score" in outcome.detail
    assert outcome.value == {"verdict": "PASS", "extra": 1}


def test_parse_model_passes_through_missing() -> None:
    outcome, value = parse_model("no json", VerdictOut)
    assert (outcome.status, value) == ("missing", None)


CUT = (
    '{"answer_version": "executor_evidence_v2", "claims": [{"claim_id": "claim-1", '
    '"claim_text": "CPU 92%"}, {"claim_id": "claim-2", "claim_text": "memory at'
)


@pytest.mark.parametrize(
    "text",
    [CUT, CUT[:-10], "Here it is: " + CUT, '{"outer": {"inner": 1}, "cut": [1, 2'],
    ids=["string", "earlier", "after-prose", "nested"],
)
def test_inner_object_of_a_cut_off_reply_is_never_taken(text: str) -> None:
    outcome = parse_json_object(text)
    assert outcome.status == "invalid", outcome
    assert outcome.value is None and not outcome.ok


def test_noting_turns_valid_into_repaired_and_keeps_invalid() -> None:
    valid = parse_json_object('{"a": 1}').noting("1 tool call(s) recovered")
    assert (valid.status, valid.value) == ("repaired", {"a": 1})
    assert "recovered" in valid.detail
    invalid = parse_json_object("{broken").noting("x")
    assert invalid.status == "invalid"
