"""Verifier and pipeline replay, frozen tools, exports and eval scoring — all in memory.

The recordings are made by the in-process chain itself over the demo alerts
(query_metrics answers from memory), so no broker or database is needed.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from replay.chain import Chain, ChainResult
from replay.compare import pipeline_report, verifier_report
from replay.evals import EVALS_DIR, Expect, load_suite, score
from replay.frozen import FrozenTools, with_faults
from replay.recorded import Recording, export_jsonl, load_jsonl
from replay.report import render_text
from services.executor.handler import ExecutorHandler
from services.executor.tools import ToolSettings, build_tools
from services.planner.handler import PlannerHandler
from services.planner.skills import load_skills
from services.verifier.handler import VerifierHandler, VerifierSettings
from services.verifier.rules_file import VERIFIER_RULES_PATH
from tests.support import fake_openai
from tests.support.plans import edited_skills
from tracebound.cli import main
from tracebound.client import new_request
from tracebound.events import Event, PlanProduced, ToolInvoked
from tracebound.llm import LLMSettings, OpenAIChatModel

CPU_ZH = "payment-service 当前是否有 HighCPUUsage 告警？"
SLOW_EN = "Is there a SlowResponse alert on user-service?"
MEMORY_EN = "Why is order-service using so much memory? Please analyse it."


def _metrics_only() -> dict[str, object]:
    return {
        name: tool
        for name, tool in build_tools(ToolSettings.demo()).items()
        if name == "query_metrics"
    }


def _record(*questions: str) -> tuple[Recording, list[ChainResult]]:
    """Run questions through the chain and keep what the topics would have held."""
    chain = Chain.build(_metrics_only())  # type: ignore[arg-type]
    results = [chain.run(new_request(q, language="zh" if "告警" in q else "en")) for q in questions]
    events: list[Event] = []
    for result in results:
        events += result.events
        events += [
            result.evidence[0].reply(ToolInvoked, "executor", tool_invocation=inv)
            for inv in result.invocations
        ]
    return Recording(events), results


def test_verifier_replay_in_rules_mode_changes_nothing() -> None:
    recording, _ = _record(CPU_ZH, SLOW_EN)
    report = verifier_report(recording, VerifierHandler(), {"mode": "rules"})
    assert report.summary["inputs"] == 2
    assert report.summary["changed"] == 0
    assert report.summary["verdict_transitions"] == {"PASS→PASS": 2}
    assert report.summary["groundedness_delta_mean"] == 0


def test_verifier_replay_in_llm_mode_reports_what_the_model_changed() -> None:
    # The real openai client against a local server that refutes every claim: the
    # replay re-judges each recorded gatekeeper result and reports both runs changed.
    recording, results = _record(CPU_ZH, SLOW_EN)
    verdicts = [r.verdict for r in results]
    assert all(v is not None for v in verdicts)
    claim_ids = sorted({c.claim_id for v in verdicts if v is not None for c in v.claim_checks})
    assert claim_ids
    refuted = {
        "verdict": "REJECT",
        "groundedness_score": 0.0,
        "critical_fact_count": len(claim_ids),
        "claim_checks": [
            {"claim_id": cid, "status": "REFUTED", "reason": "the excerpt says otherwise"}
            for cid in claim_ids
        ],
        "facts_checked": [],
        "rationale": "refuted",
    }
    with fake_openai.FakeOpenAI(default=fake_openai.text(json.dumps(refuted))) as server:
        model = OpenAIChatModel(LLMSettings(base_url=server.base_url, max_retries=0))
        handler = VerifierHandler(VerifierSettings(max_rounds=1), model)
        report = verifier_report(recording, handler, {"mode": "llm", "model": "fake"})
        assert len(server.requests) == 2
    assert report.summary["inputs"] == 2 and report.summary["changed"] == 2
    assert "PASS→PASS" not in report.summary["verdict_transitions"]
    assert report.summary["groundedness_delta_mean"] <= 0


def test_pipeline_replay_with_frozen_tools_reproduces_the_verdicts() -> None:
    recording, _ = _record(CPU_ZH, SLOW_EN)
    report = pipeline_report(recording, Chain.build({}), {"mode": "rules"})
    assert report.summary["runs"] == 2
    assert report.summary["verdict_changed"] == 0 and report.summary["answer_changed"] == 0
    assert report.summary["unrecorded_tool_calls"] == 0
    assert all(r["tool_calls_answered"] >= 1 for r in report.per_run)


def _as_before_plans_carried_calls(events: list[Event]) -> list[Event]:
    """The events as recorded before plans carried their calls (``execution`` null)."""
    return [
        e.model_copy(update={"plan": e.plan.model_copy(update={"execution": None})})
        if isinstance(e, PlanProduced)
        else e
        for e in events
    ]


def test_a_replay_after_a_skill_edit_runs_the_calls_of_the_recorded_plans() -> None:
    # Broad question: the skill's steps are the calls. Logs and runbooks are "down"
    # so their calls are recorded (as failed) without a database.
    tools = with_faults(build_tools(ToolSettings.demo()), ["query_logs", "lookup_knowledge"])
    result = Chain.build(tools).run(new_request(MEMORY_EN))
    invoked = [
        result.evidence[0].reply(ToolInvoked, "executor", tool_invocation=inv)
        for inv in result.invocations
    ]
    assert {i.tool_name for i in result.invocations} >= {"query_logs", "lookup_knowledge"}
    skills = edited_skills(load_skills())
    edited = dataclasses.replace(
        Chain.build({}), planner=PlannerHandler(skills), executor=ExecutorHandler({}, skills)
    )
    for events in (result.events, _as_before_plans_carried_calls(result.events)):
        report = pipeline_report(Recording([*events, *invoked]), edited, {"mode": "rules"})
        assert report.summary["unrecorded_tool_calls"] == 0, report.per_run
        assert report.summary["changed"] == 0, report.per_run
        assert report.per_run[0]["plan"] == "recorded"
    # Without its plan on record the run is planned again, with the edited skill.
    unplanned = [e for e in [*result.events, *invoked] if not isinstance(e, PlanProduced)]
    report = pipeline_report(Recording(unplanned), edited, {"mode": "rules"})
    assert report.per_run[0]["plan"] == "planned again"
    assert report.summary["unrecorded_tool_calls"] >= 1


def test_an_unrecorded_call_is_reported_and_answered_as_failed() -> None:
    recording, results = _record(CPU_ZH)
    recording.events = [e for e in recording.events if not isinstance(e, ToolInvoked)]
    report = pipeline_report(recording, Chain.build({}), {"mode": "rules"})
    [row] = report.per_run
    assert row["unrecorded_tool_calls"][0]["tool_name"] == "query_metrics"
    assert row["new"]["verdict"] != "PASS" and row["verdict_changed"]
    assert "92%" not in (row["new"]["answer"] or "")
    assert report.summary["runs_changed"] == [results[0].run_id]
    assert "unrecorded tool call" in render_text(report)


def test_frozen_tools_match_on_normalised_parameters() -> None:
    _, [result] = _record(CPU_ZH)
    frozen = FrozenTools.of(result.invocations)
    tool = frozen.tools()["query_metrics"]
    recorded = result.invocations[0]
    params = tool.params_model.model_validate(recorded.input_params)
    outcome = tool.run(params, None)  # type: ignore[arg-type]
    assert outcome.retrieval_details == recorded.retrieval_details
    assert recorded.backend is not None and recorded.backend.name == "demo"
    assert outcome.backend == recorded.backend  # a replay keeps the backend it was recorded with
    assert frozen.hits == 1 and not frozen.misses
    other = tool.params_model.model_validate({"service": "checkout-service"})
    assert not tool.run(other, None).success  # type: ignore[arg-type]
    assert frozen.misses[0].params["service"] == "checkout-service"


def test_export_round_trips(tmp_path: Path) -> None:
    recording, _ = _record(CPU_ZH)
    path = tmp_path / "recording.jsonl"
    assert export_jsonl(recording.events, path) == len(recording.events)
    assert load_jsonl(path).events == recording.events


def test_a_failing_tool_is_recorded_as_a_failed_invocation() -> None:
    chain = Chain.build(with_faults(_metrics_only(), ["query_metrics"]))  # type: ignore[arg-type]
    result = chain.run(new_request(CPU_ZH, language="zh"))
    assert result.invocations and not any(i.success for i in result.invocations)
    reasons = score(Expect(verdict="PASS", must_not_contain=("92%",)), result)
    assert [r["passed"] for r in reasons] == [False, True]


def test_scoring_names_each_expectation() -> None:
    _, [result] = _record(CPU_ZH)
    expect = Expect(
        verdict=("PASS",),
        claim_types=("observation",),
        max_claims=2,
        must_contain=("92%",),
        must_not_contain=("已排除",),
        required_tools=("query_metrics", "query_logs"),
        citations_valid=True,
    )
    reasons = score(expect, result)
    failed = [r for r in reasons if not r["passed"]]
    assert [r["check"] for r in failed] == ["required_tools"]
    assert "query_logs never called" in failed[0]["detail"]


def test_the_shipped_suite_is_valid_and_covers_the_narrative() -> None:
    cases = load_suite(EVALS_DIR / "demo")
    assert len(cases) >= 12
    assert any(c.faults.failing_tools for c in cases)
    assert any(c.request.mode == "AIOPS" and len(c.request.alerts) == 3 for c in cases)
    assert {c.request.language for c in cases} == {"en", "zh"}


def test_a_broken_case_file_names_itself(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text('{"id": "x", "request": {}}', encoding="utf-8")
    with pytest.raises(Exception, match=r"bad\.json"):
        load_suite(tmp_path)


def test_verifier_replay_takes_candidate_verifier_rules(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A candidate that verifies no binding status: every recorded PASS must change,
    # and the candidate reaches the verifier without touching the process environment.
    recording, _ = _record(CPU_ZH, SLOW_EN)
    exported = tmp_path / "recording.jsonl"
    export_jsonl(recording.events, exported)
    rules = json.loads(VERIFIER_RULES_PATH.read_text(encoding="utf-8"))
    rules.update(version="verifier-rules-candidate", verified_binding_statuses=["none"])
    candidate = tmp_path / "verifier-rules.json"
    candidate.write_text(json.dumps(rules), encoding="utf-8")
    environ = dict(os.environ)
    argv = ["replay", "--stage", "verifier", "--from-file", str(exported), "--no-store", "--json"]
    assert main([*argv, "--verifier-rules", str(candidate)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert os.environ == environ
    assert report["candidate"]["verifier_rule_set_version"] == "verifier-rules-candidate"
    assert report["summary"]["inputs"] == 2 and report["summary"]["changed"] == 2
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["summary"]["changed"] == 0


def test_pipeline_and_verifier_replays_run_partition_groups_one_at_a_time() -> None:
    recording, _ = _record(CPU_ZH, SLOW_EN)
    runs = list(dict.fromkeys(e.run_id for e in recording.events))
    groups = [Recording([e for e in recording.events if e.run_id == run]) for run in runs]
    whole = pipeline_report(recording, Chain.build({}), {"mode": "rules"})
    grouped = pipeline_report(iter(groups), Chain.build({}), {"mode": "rules"})
    assert grouped.summary == whole.summary and grouped.summary["runs"] == 2
    assert grouped.per_run == whole.per_run
    judged = verifier_report(recording, VerifierHandler(), {"mode": "rules"})
    judged_by_group = verifier_report(iter(groups), VerifierHandler(), {"mode": "rules"})
    assert judged_by_group.summary == judged.summary
    assert judged_by_group.per_run == judged.per_run
