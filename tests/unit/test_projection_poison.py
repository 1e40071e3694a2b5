"""Text PostgreSQL cannot store, and events a read model cannot fold, cost nothing else."""

from __future__ import annotations

import json
from dataclasses import dataclass

from projections.runner import projection_letter
from projections.store import REPLACEMENT, _adapt, json_bytes


def test_a_nul_in_a_jsonb_string_becomes_the_replacement_character() -> None:
    data = json_bytes({"q": "a\x00b", "list": ["\x00"], "literal": "\\u0000 stays"})
    assert b"\\u0000" not in data.replace(b"\\\\u0000", b"")
    assert json.loads(data) == {"q": "a\ufffdb", "list": ["\ufffd"], "literal": "\\u0000 stays"}


def test_json_without_a_nul_is_written_as_it_was() -> None:
    value = {"q": "plain", "n": [1, 2.5, None]}
    assert json.loads(json_bytes(value)) == value


def test_a_nul_in_a_text_column_becomes_the_replacement_character() -> None:
    assert _adapt("query", "x\x00y") == f"x{REPLACEMENT}y"
    assert _adapt("query", "clean") == "clean"
    assert _adapt("latency_ms", 5) == 5


@dataclass
class _Message:
    _offset: int

    def topic(self) -> str:
        return "tracebound.requests"

    def partition(self) -> int:
        return 2

    def offset(self) -> int:
        return self._offset

    def key(self) -> bytes:
        return b"run-1"

    def value(self) -> bytes:
        return b"\x00bad"


def test_a_projection_letter_has_one_id_per_place_however_often_it_is_made() -> None:
    first = projection_letter("diagnosis_run", _Message(7), KeyError("alerts"))
    again = projection_letter("diagnosis_run", _Message(7), KeyError("alerts"))
    other = projection_letter("diagnosis_run", _Message(8), KeyError("alerts"))
    assert first.event_id == again.event_id != other.event_id
    assert (first.run_id, first.source_offset, first.error_type) == ("run-1", 7, "KeyError")
    assert first.value == b"\x00bad" and first.service == "diagnosis_run"
