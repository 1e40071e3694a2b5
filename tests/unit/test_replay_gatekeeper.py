"""Gatekeeper replay: old vs new per run and in total, over evidence built in memory."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from replay.compare import gatekeeper_report
from replay.gate import GateGroup, decode
from replay.recorded import Recording, Selection
from replay.report import render_text
from services.gatekeeper.handler import GatekeeperHandler
from services.gatekeeper.ruleset import DEFAULT_RULES_PATH, default_ruleset, parse_ruleset
from tests.support import demo_evidence
from tests.support.evidence_events import evidence_event
from tracebound.codec import SingleObjectCodec
from tracebound.errors import DecodeError
from tracebound.events import (
    DiagnosisRequest,
    DiagnosisRequested,
    Event,
    EvidenceProduced,
    Producer,
)

EXCERPT_RULE = "evidence.excerpt_supported"


def _without(rule_id: str) -> GatekeeperHandler:
    data: dict[str, Any] = json.loads(DEFAULT_RULES_PATH.read_text(encoding="utf-8"))
    data["rule_set_version"] = "candidate"
    for rule in data["rules"]:
        if rule["id"] == rule_id:
            rule["enabled"] = False
    return GatekeeperHandler(parse_ruleset(data, "candidate.json"))


def _bad_excerpt() -> EvidenceProduced:
    scenario = demo_evidence.scenarios()[0]
    output = copy.deepcopy(scenario.structured_output)
    output["claims"][0]["evidence_bindings"][0]["evidence_excerpt"] = "CPU usage is 12%, all fine"
    return evidence_event(output, scenario.tool_invocations)


def _recorded() -> tuple[Recording, list[EvidenceProduced]]:
    """Evidence plus the results the live rule set gave them, as the topics would hold."""
    good = [
        evidence_event(s.structured_output, s.tool_invocations) for s in demo_evidence.scenarios()
    ]
    bad = [_bad_excerpt(), _bad_excerpt()]
    live = GatekeeperHandler(default_ruleset())
    events: list[Event] = []
    for evidence in [*good, *bad]:
        events += [evidence, *live(evidence)]
    return Recording(events), bad


def test_the_same_rules_change_nothing() -> None:
    recording, _ = _recorded()
    report = gatekeeper_report(recording, GatekeeperHandler(default_ruleset()))
    assert report.summary["changed"] == 0
    assert report.summary["runs_changed"] == []
    assert all(k.split("→")[0] == k.split("→")[1] for k in report.summary["severity_transitions"])


def test_disabling_a_rule_lists_exactly_the_runs_it_decided() -> None:
    recording, bad = _recorded()
    report = gatekeeper_report(recording, _without(EXCERPT_RULE))
    assert report.summary["runs_changed"] == sorted(e.run_id for e in bad)
    assert report.summary["severity_transitions"]["reject→none"] == 2
    assert report.summary["rule_fires"][EXCERPT_RULE] == {"old": 2, "new": 0}
    changed = [r for r in report.per_run if r["changed"]]
    assert {r["run_id"] for r in changed} == {e.run_id for e in bad}
    assert all(r["failed_rules_removed"] == [EXCERPT_RULE] for r in changed)
    assert all((r["old"]["status"], r["new"]["status"]) == ("fail", "pass") for r in changed)
    assert report.candidate["rule_set_version"] == "candidate"
    text = render_text(report)
    assert "reject→none: 2" in text and f"{EXCERPT_RULE}: 2 → 0" in text


def test_evidence_without_a_recorded_result_is_reported_not_guessed() -> None:
    recording, _ = _recorded()
    orphan = evidence_event(
        demo_evidence.scenarios()[0].structured_output,
        demo_evidence.scenarios()[0].tool_invocations,
    )
    recording.events.append(orphan)
    report = gatekeeper_report(recording, GatekeeperHandler(default_ruleset()))
    assert report.summary["without_recorded_result"] == 1
    assert report.summary["runs_changed"] == [orphan.run_id]


def test_run_selection_limits_the_inputs() -> None:
    recording, bad = _recorded()
    selection = Selection(run_ids=frozenset({bad[0].run_id}))
    report = gatekeeper_report(recording, _without(EXCERPT_RULE), selection)
    assert report.summary["inputs"] == 1
    assert report.summary["runs_changed"] == [bad[0].run_id]


def test_partition_groups_give_the_report_of_the_whole_recording() -> None:
    """Read group by group, each input still finds its recorded result in its own group."""
    recording, bad = _recorded()
    whole = gatekeeper_report(recording, _without(EXCERPT_RULE))
    half = len(recording.events) // 2
    half -= half % 2  # an evidence event and its result stay together, as runs do
    groups = [Recording(recording.events[:half]), Recording(recording.events[half:])]
    grouped = gatekeeper_report(iter(groups), _without(EXCERPT_RULE))
    assert grouped.summary == whole.summary
    assert grouped.per_run == whole.per_run
    assert grouped.summary["runs_changed"] == sorted(e.run_id for e in bad)


def _legacy_evidence() -> EvidenceProduced:
    """A round whose cited invocation was recorded before evidence refs existed."""
    scenario = demo_evidence.scenarios()[0]
    event = evidence_event(scenario.structured_output, scenario.tool_invocations)
    trace = tuple(i.model_copy(update={"retrieval_details": None}) for i in event.tool_trace)
    return event.model_copy(update={"tool_trace": trace})


def test_the_topics_read_slim_give_the_report_of_whole_events() -> None:
    """Decoded only as far as the replay reads, the recording gives the same report."""
    recording, _ = _recorded()
    legacy = _legacy_evidence()
    recording.events += [legacy, *GatekeeperHandler(default_ruleset())(legacy)]
    codec = SingleObjectCodec()
    slim = GateGroup()
    for event in recording.events:
        item = decode(codec.encode(event))
        assert item is not None
        slim.add(item)
    candidates = ((GatekeeperHandler(default_ruleset()), 0), (_without(EXCERPT_RULE), 2))
    for handler, changed in candidates:
        whole = gatekeeper_report(recording, handler)
        read = gatekeeper_report([slim], handler)
        assert read.summary == whole.summary
        assert read.per_run == whole.per_run
        assert read.baseline == whole.baseline
        assert read.summary["changed"] == changed
        assert read.summary["rule_fires"]["invocation.legacy_refs"]["old"] == 1


def test_a_message_the_codec_cannot_read_is_not_read_slim_either() -> None:
    recording, _ = _recorded()
    data = SingleObjectCodec().encode(recording.events[0])
    for broken in (b"", b"junk", data[:-3], data + b"\x00", b"\xc3\x01" + b"\x00" * 8 + data[10:]):
        with pytest.raises(DecodeError):
            SingleObjectCodec().decode(broken)
        with pytest.raises(DecodeError):
            decode(broken)
    other = SingleObjectCodec().encode(
        DiagnosisRequested(
            run_id="r",
            producer=Producer(service="test"),
            request=DiagnosisRequest(mode="CHAT", query="q", language="zh"),
        )
    )
    assert decode(other) is None
