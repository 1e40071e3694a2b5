"""The topology: consistent in itself, used by its consumers, and drawn truly in the README."""

from __future__ import annotations

from tests.support.diagram import Diagram, architecture, roles_table
from tracebound import topology
from tracebound.events import EVENT_TYPES
from tracebound.resources import ROOT as REPO_ROOT
from tracebound.stack.services import ROLE_INPUTS
from tracebound.topics import topic_table

README = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
ROLE_NAMES = frozenset(r.name for r in topology.ROLES)


def _declared_edges() -> set[tuple[str, str]]:
    edges: set[tuple[str, str]] = set()
    for role in topology.ROLES:
        edges |= {(topic, role.name) for topic in role.input_topics}
        edges |= {(role.name, topic) for topic in role.output_topics}
    return edges


def test_every_event_named_has_a_class_and_a_topic() -> None:
    table = {t.event for t in topic_table()}
    named = {e for r in topology.ROLES for e in (*r.accepts, *r.emits, *r.watches)}
    named |= {e for m in topology.READ_MODELS for e in m.events}
    assert named <= table == set(EVENT_TYPES)


def test_every_accepted_event_is_emitted_by_some_role() -> None:
    emitted = {e for r in topology.ROLES for e in r.emits}
    for role in topology.ROLES:
        assert set(role.accepts) | set(role.watches) <= emitted, role.name


def test_the_stack_and_the_read_side_derive_from_it() -> None:
    assert list(ROLE_INPUTS) == [r.name for r in topology.ROLES]
    assert ROLE_INPUTS["executor"] == ("tracebound.plans", "tracebound.retries")
    assert ROLE_INPUTS["ingest"] == ROLE_INPUTS["sentinel"] == ()
    projected = {t for m in topology.READ_MODELS for t in m.topics}
    assert set(ROLE_INPUTS["projections"]) == projected
    assert "tracebound.dead-letters" in projected  # for the dashboard's dead-letter rate


def test_replay_reads_a_stage_with_its_inputs_and_outputs() -> None:
    assert topology.REPLAY_TOPICS["gatekeeper"] == (
        "tracebound.evidence",
        "tracebound.gatekeeper-results",
    )
    assert topology.REPLAY_TOPICS["verifier"] == (
        "tracebound.gatekeeper-results",
        "tracebound.verdicts",
        "tracebound.retries",
    )
    assert "tracebound.agent-steps" not in topology.EXPORT_TOPICS


def test_no_topic_name_is_written_outside_the_table_and_the_topology() -> None:
    names = [t.name for t in topic_table()]
    for folder in ("services", "projections", "web", "replay", "tracebound"):
        for path in (REPO_ROOT / folder).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            assert not any(f'"{name}"' in text for name in names), path


def test_the_readme_diagram_draws_exactly_the_declared_edges() -> None:
    drawn = Diagram(architecture(README), ROLE_NAMES).edges()
    declared = _declared_edges()
    assert drawn - declared == set(), "drawn but not declared"
    assert declared - drawn == set(), "declared but not drawn"


def test_the_diagram_reader_sees_a_wrong_arrow() -> None:
    text = "  tracebound.plans ──► executor ──► tracebound.verdicts\n"
    edges = Diagram(text, ROLE_NAMES).edges()
    assert edges == {("tracebound.plans", "executor"), ("executor", "tracebound.verdicts")}
    assert not edges <= _declared_edges()


def test_the_readme_roles_table_matches() -> None:
    table = roles_table(README)
    assert set(table) == ROLE_NAMES
    side = {"tracebound.agent-steps", "tracebound.dead-letters"}  # drawn in the diagram only
    for role in topology.ROLES:
        reads, writes = table[role.name]
        assert reads == {*role.input_topics, *role.watched_topics}, role.name
        assert writes == set(role.output_topics) - side, role.name


def test_a_resolution_is_a_fact_of_the_run_that_no_stage_answers() -> None:
    resolved = topology.ALERTS_RESOLVED
    assert resolved in topology.RUN_EVENTS and resolved not in topology.STAGE_EVENTS
    assert resolved not in topology.WATCHED_EVENTS  # the sentinel's deadline ignores it
    readers = [r.name for r in topology.ROLES if resolved in r.accepts]
    assert readers == ["projections"]
    assert [r.name for r in topology.ROLES if resolved in r.emits] == ["ingest"]
    assert "tracebound.resolutions" not in topology.EXPORT_TOPICS
