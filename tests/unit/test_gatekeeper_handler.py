"""The gatekeeper role as a pure handler, and its results on the wire."""

from __future__ import annotations

import pytest

from services.gatekeeper import check, default_ruleset
from services.gatekeeper.handler import GatekeeperHandler
from tests.support import demo_evidence, mutations
from tests.support.evidence_events import evidence_event
from tests.support.gate import records
from tracebound.codec import SingleObjectCodec
from tracebound.events import GatekeeperResult

CODEC = SingleObjectCodec()


@pytest.mark.parametrize("scenario", demo_evidence.scenarios(), ids=lambda s: s.name)
def test_correct_evidence_passes_and_carries_the_run(scenario: demo_evidence.Scenario) -> None:
    event = evidence_event(scenario.structured_output, scenario.tool_invocations)
    [result] = GatekeeperHandler(default_ruleset())(event)
    assert isinstance(result, GatekeeperResult)
    gate = result.gatekeeper_result
    assert (gate.status, gate.severity) == ("pass", "none")
    assert gate.rule_set_version == "gatekeeper-rules-v3"
    assert result.run_id == event.run_id and result.causation_id == event.event_id
    assert result.original_query == event.request.query
    assert len(result.tool_trace_summary) == len(event.tool_trace)
    assert all(b.matched_text for b in gate.checked_bindings)


def test_the_event_and_the_cli_input_give_one_result() -> None:
    scenario = demo_evidence.scenarios()[0]
    event = evidence_event(scenario.structured_output, scenario.tool_invocations)
    [result] = GatekeeperHandler(default_ruleset())(event)
    assert isinstance(result, GatekeeperResult)
    parsed = records(scenario.tool_invocations)
    direct = check(scenario.structured_output, parsed, default_ruleset())
    assert result.gatekeeper_result == direct.result
    assert result.executor_structured_output == direct.structured_output


@pytest.mark.parametrize("family", ["A", "B", "D", "F"])
def test_every_outcome_survives_the_wire(family: str) -> None:
    handler = GatekeeperHandler(default_ruleset())
    for case in mutations.generate(family, count=60):
        event = evidence_event(case.structured_output, case.tool_invocations)
        [result] = handler(event)
        assert isinstance(result, GatekeeperResult)
        assert CODEC.decode(CODEC.encode(result)) == result
        assert result.gatekeeper_result.severity == case.expected_severity, case.detail
