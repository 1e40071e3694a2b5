"""tool_invocation, agent_step and dead_letter rows, model selection and migration files."""

from __future__ import annotations

from pathlib import Path

import pytest

from projections.live import PendingFacts, PendingRuns
from projections.migrate import load_migrations
from projections.models import ALL_TOPICS, MODELS, select_models
from projections.reducers import (
    DEAD_LETTER_ROWS,
    INVOCATION_ROWS,
    STEP_ROWS,
    dead_letter_row,
    invocation_row,
    step_row,
)
from projections.store import RunStates
from tests.support.samples import sample
from tracebound import topics
from tracebound.codec.documents import document
from tracebound.errors import ConfigError, InvalidInputError
from tracebound.events import AgentStep, DeadLetter, EvidenceRef, RetrievalDetails, ToolInvoked
from tracebound.stack.services import CHECKPOINTED_ROLES, ROLE_INPUTS, role_module


def _invoked(event_id: str, invocation_id: int = 517) -> ToolInvoked:
    base = sample(ToolInvoked)
    details = RetrievalDetails(
        evidence_status="hit",
        evidence_refs=(EvidenceRef(raw_path="$.logs[0]", text="HikariPool-1 timeout"),),
        relevance_level="PRECISE",
    )
    invocation = base.tool_invocation.model_copy(
        update={"source_invocation_id": invocation_id, "retrieval_details": details}
    )
    return base.model_copy(update={"event_id": event_id, "tool_invocation": invocation})


def test_an_invocation_row_keeps_the_evidence_refs() -> None:
    event = _invoked("e-1")
    row = invocation_row(document(event))
    assert row["id"] == 517 and row["event_id"] == "e-1" and row["run_id"] == event.run_id
    assert row["retrieval_details"]["evidence_refs"] == [
        {"raw_path": "$.logs[0]", "text": "HikariPool-1 timeout"}
    ]
    assert row["relevance_level"] == "PRECISE"
    assert row["created_at"] == event.occurred_at
    assert row["output"] == event.tool_invocation.output


def test_one_invocation_id_twice_keeps_the_larger_event_id_in_any_order() -> None:
    a, b = _invoked("e-1"), _invoked("e-2")
    assert INVOCATION_ROWS([a, b]) == INVOCATION_ROWS([b, a])
    assert INVOCATION_ROWS([a, b, a])[517]["event_id"] == "e-2"


def test_a_step_row_and_its_duplicate() -> None:
    step = sample(AgentStep)
    row = step_row(document(step))
    assert row["event_id"] == step.event_id and row["agent_name"] == step.agent_name
    assert row["token_count"] == step.token_count
    assert list(STEP_ROWS([step, step])) == [step.event_id]
    assert STEP_ROWS([_invoked("e-1")]) == {}


def test_a_dead_letter_row_keeps_where_and_why_but_not_the_bytes() -> None:
    letter = sample(DeadLetter).model_copy(
        update={"run_id": "unknown", "error_message": "x" * 5000, "value": b"\x00secret"}
    )
    row = dead_letter_row(document(letter))
    assert row["run_id"] is None  # the input had no readable key
    assert row["source_topic"] == letter.source_topic and row["service"] == letter.service
    assert len(row["error_message"]) == 1000 and "value" not in row and "key" not in row
    keyed = letter.model_copy(update={"run_id": "run-7"})
    assert dead_letter_row(document(keyed))["run_id"] == "run-7"
    assert list(DEAD_LETTER_ROWS([letter, letter])) == [letter.event_id]


def test_models_and_their_topics() -> None:
    assert [m.name for m in select_models(None)] == [
        "diagnosis_run",
        "tool_invocation",
        "agent_step",
        "dead_letter",
    ]
    assert select_models("agent_step") == [MODELS["agent_step"]]
    with pytest.raises(InvalidInputError):
        select_models("nope")
    assert MODELS["dead_letter"].topics == (topics.DEAD_LETTERS,)
    assert set(ROLE_INPUTS["projections"]) == set(ALL_TOPICS)


def test_the_stack_runs_projections_as_its_own_module() -> None:
    assert role_module("projections") == "projections"
    assert role_module("planner") == "services.planner"
    assert "projections" in CHECKPOINTED_ROLES and "planner" not in CHECKPOINTED_ROLES


def test_migration_files_are_numbered_and_checksummed(tmp_path: Path) -> None:
    shipped = load_migrations()
    assert [m.version for m in shipped] == sorted(m.version for m in shipped)
    assert shipped[0].name == "read_models" and len(shipped[0].checksum) == 64
    (tmp_path / "0001_a.sql").write_text("SELECT 1;")
    (tmp_path / "0002_b.sql").write_text("SELECT 2;")
    assert [m.name for m in load_migrations(tmp_path)] == ["a", "b"]
    (tmp_path / "0002_c.sql").write_text("SELECT 3;")
    with pytest.raises(ConfigError):
        load_migrations(tmp_path)
    (tmp_path / "0002_c.sql").unlink()
    (tmp_path / "bad name.sql").write_text("SELECT 4;")
    with pytest.raises(ConfigError):
        load_migrations(tmp_path)


def test_run_states_drop_the_least_recently_kept() -> None:
    states = RunStates(max_runs=2)
    assert states.keep({"a": {"n": 1}, "b": {"n": 2}}) == {}
    assert states.held(["b", "x"]) == {"b": {"n": 2}}
    assert states.keep({"a": {"n": 3}, "c": {"n": 4}}) == {"b": {"n": 2}}
    assert states.held(["a", "b", "c"]) == {"a": {"n": 3}, "c": {"n": 4}}
    states.clear()
    assert states.held(["a", "c"]) == {}


def test_run_states_drop_answered_runs_first() -> None:
    states = RunStates(max_runs=2)
    states.keep({"a": {"n": 1}, "b": {"answer": {}}})
    assert states.keep({"a": {"n": 2}, "c": {"n": 3}}) == {"b": {"answer": {}}}
    assert states.keep({"d": {"n": 4}}) == {"a": {"n": 2}}


def test_every_model_is_fed_by_its_declared_events() -> None:
    assert isinstance(MODELS["diagnosis_run"].live_writer(), PendingRuns)
    assert isinstance(MODELS["tool_invocation"].live_writer(), PendingFacts)
    assert MODELS["tool_invocation"].events == {"ToolInvoked"}
    assert MODELS["agent_step"].topics == (topics.AGENT_STEPS,)
