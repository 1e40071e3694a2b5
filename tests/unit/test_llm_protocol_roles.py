"""Each server behaviour through the roles: the model's intent is used, or the fallback says why.

Real ``openai`` client against the scripted server; what must never happen is a
silently wrong outcome — a draft or a fragment taken as the answer, a parse
status that says ``valid`` for something that was not, a REFUTED turned into PASS.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from services.executor.handler import ExecutorHandler
from services.executor.settings import ExecutorSettings
from services.executor.tools import ToolSettings, build_tools
from services.planner.handler import PlannerHandler
from services.planner.skills import load_skills
from services.verifier.handler import VerifierHandler, VerifierSettings
from tests.support import fake_openai as fake
from tests.support.cpu_answer import CPU_PARAMS, CPU_QUESTION, cpu_answer
from tests.unit.test_verifier_llm import gate_event, reply, scenario, verdict_of
from tracebound.client import new_request
from tracebound.events import AgentStep, EvidenceProduced, PlanProduced, ToolInvoked
from tracebound.llm import LLMSettings, OpenAIChatModel


@pytest.fixture
def server() -> Iterator[fake.FakeOpenAI]:
    with fake.FakeOpenAI() as srv:
        yield srv


def _model(server: fake.FakeOpenAI) -> OpenAIChatModel:
    return OpenAIChatModel(LLMSettings(base_url=server.base_url, max_retries=0, timeout_s=5))


def _plan() -> PlanProduced:
    [plan] = PlannerHandler(load_skills())(new_request(CPU_QUESTION, language="zh"))
    assert isinstance(plan, PlanProduced)
    return plan


def _evidence(plan: PlanProduced, calls: int = 1) -> dict[str, Any]:
    """The executor_evidence_v2 the gatekeeper passes, citing the ``calls``-th call's ref."""
    return cpu_answer(plan.run_id, calls)


def _execute(server: fake.FakeOpenAI, plan: PlanProduced, *entries: fake.Entry) -> list[Any]:
    server.script(*entries)
    handler = ExecutorHandler(
        build_tools(ToolSettings.demo()),
        load_skills(),
        ExecutorSettings(mode="llm"),
        _model(server),
    )
    return handler(plan)


def _of(out: list[Any], kind: type) -> list[Any]:
    return [e for e in out if isinstance(e, kind)]


def _then_evidence(server: fake.FakeOpenAI, first: fake.Entry) -> tuple[list[Any], Any]:
    """The executor's events after ``first`` and a final reply of valid evidence."""
    plan = _plan()
    final = json.dumps(_evidence(plan), ensure_ascii=False)
    out = _execute(server, plan, first, fake.text(final))
    [ev] = _of(out, EvidenceProduced)
    return out, ev


def test_calls_left_in_the_text_are_run_and_the_status_says_repaired(
    server: fake.FakeOpenAI,
) -> None:
    first = fake.tool_calls_in_content(("query_metrics", CPU_PARAMS), tags=True)
    out, ev = _then_evidence(server, first)
    assert len(_of(out, ToolInvoked)) == 1
    status = ev.executor_output_parse_status
    assert status.status == "repaired" and "recovered from the reply text" in status.detail
    assert ev.executor_structured_output["claims"][0]["claim_id"] == "claim-1"
    first = _of(out, AgentStep)[0]
    assert first.has_tool_call and "recovered" in first.model_output


def test_arguments_as_an_object_run_the_call(server: fake.FakeOpenAI) -> None:
    out, ev = _then_evidence(server, fake.tool_calls_as_objects(("query_metrics", CPU_PARAMS)))
    assert len(_of(out, ToolInvoked)) == 1
    assert ev.executor_output_parse_status.status == "valid"


def test_unknown_tool_bad_arguments_and_a_repeated_call_are_refused_visibly(
    server: fake.FakeOpenAI,
) -> None:
    first = fake.tool_calls(
        ("query_metrics", CPU_PARAMS),
        ("drop_database", {}),
        ("query_logs", '{"query": '),
        ("query_metrics", CPU_PARAMS),
    )
    out, ev = _then_evidence(server, first)
    results = [
        m
        for m in server.requests[1].messages
        if m["role"] == "tool" and not m["tool_call_id"].startswith("plan-")
    ]  # the model's own calls, after the planned ones that ran first
    refused = [json.loads(m["content"]) for m in results[1:]]
    assert all(r.get("refused") for r in refused), refused
    assert "not valid JSON" in refused[1]["reason"]
    assert len(_of(out, ToolInvoked)) == 1, "only the first, well-formed call ran"
    assert ev.executor_output_parse_status.status == "valid"


def test_a_json_draft_in_the_thought_is_not_the_evidence(server: fake.FakeOpenAI) -> None:
    plan = _plan()
    draft = {**_evidence(plan), "claims": [], "missing_info": ["DRAFT"]}
    final = json.dumps(_evidence(plan), ensure_ascii=False)
    out = _execute(
        server,
        plan,
        fake.tool_call("query_metrics", CPU_PARAMS),
        fake.thinking(final, json.dumps(draft)),
    )
    [ev] = _of(out, EvidenceProduced)
    assert ev.executor_output_parse_status.status == "valid"
    assert ev.executor_structured_output["claims"] and "DRAFT" not in ev.executor_final_answer
    assert "DRAFT" in (_of(out, AgentStep)[-1].thought or "")


def test_a_cut_off_reply_falls_back_and_says_why(server: fake.FakeOpenAI) -> None:
    plan = _plan()
    cut = json.dumps(_evidence(plan), ensure_ascii=False)[:-60]
    out = _execute(server, plan, fake.tool_call("query_metrics", CPU_PARAMS), fake.truncated(cut))
    [ev] = _of(out, EvidenceProduced)
    status = ev.executor_output_parse_status
    assert "cut off at the token limit" in status.detail, status
    [claim] = ev.executor_structured_output["claims"]  # the rules executor's, not a fragment
    assert "92%" in claim["evidence_bindings"][0]["evidence_excerpt"]
    last = _of(out, AgentStep)[-1]
    assert (last.success, last.finish_reason) == (False, "length")


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ({"answer_version": "executor_evidence_v2", "claims": "none"}, "claims"),
        (
            {
                "answer_version": "executor_evidence_v2",
                "claims": [
                    {
                        "claim_id": "claim-1",
                        "claim_type": "observation",
                        "claim_text": "CPU 92%",
                        "support_level": "direct",
                    }
                ],
                "hypotheses": [],
                "recommended_actions": [],
                "missing_info": [],
            },
            "claims.0.evidence_bindings",
        ),
    ],
    ids=["claims-not-a-list", "claim-without-bindings"],
)
def test_a_json_object_of_the_wrong_shape_is_invalid_with_the_reason(
    server: fake.FakeOpenAI, body: dict[str, Any], reason: str
) -> None:
    out = _execute(server, _plan(), fake.text(json.dumps(body)))
    [ev] = _of(out, EvidenceProduced)
    status = ev.executor_output_parse_status
    assert status.status == "invalid" and "ExecutorEvidenceShape" in status.detail
    assert reason in status.detail
    assert ev.executor_structured_output == body, "kept for the gatekeeper and the trace"


def test_the_planner_uses_the_answer_not_the_draft(server: fake.FakeOpenAI) -> None:
    real = {
        "selected_skill": "diagnose-high-cpu",
        "selection_reason": "HighCPUUsage alert named",
        "plan": ["query_metrics alert_name=HighCPUUsage service=payment-service"],
        "reasoning": "answer",
    }
    draft = {**real, "plan": ["DRAFT step"], "reasoning": "draft"}
    server.script(fake.thinking(json.dumps(real), json.dumps(draft)))
    out = PlannerHandler(load_skills(), _model(server))(new_request(CPU_QUESTION, language="zh"))
    [plan] = _of(out, PlanProduced)
    assert plan.plan.planner_mode == "llm"
    assert plan.plan.planner_plan.plan == tuple(real["plan"])
    [step] = _of(out, AgentStep)
    assert step.thought is not None and "DRAFT step" in step.thought


@pytest.mark.parametrize("as_field", [False, True], ids=["think-tags", "reasoning-field"])
def test_a_refuted_claim_behind_a_passing_draft_stays_refuted(
    server: fake.FakeOpenAI, as_field: bool
) -> None:
    event = gate_event(scenario("narrow-highcpu").structured_output)
    answer = reply("REJECT", ("claim-1", "REFUTED"))
    draft = reply("PASS", ("claim-1", "SUPPORTED"))
    server.script(fake.thinking(_content(answer), _content(draft), as_field=as_field))
    out = VerifierHandler(VerifierSettings(max_rounds=1), _model(server))(event)
    verdict = verdict_of(out[0])
    assert verdict.verdict == "REJECT" and verdict.verifier_mode == "llm"
    assert [c.status for c in verdict.claim_checks] == ["REFUTED"]


def _content(entry: fake.Entry) -> str:
    assert entry.body is not None
    return str(entry.body["choices"][0]["message"]["content"])
