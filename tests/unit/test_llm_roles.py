"""The llm planner and executor against a local OpenAI-compatible server (real client)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from services.executor.handler import ExecutorHandler
from services.executor.ids import invocation_id
from services.executor.llm_executor import tool_specs
from services.executor.settings import ExecutorSettings
from services.executor.tools import ToolSettings, build_tools
from services.executor.tools.base import NO_BACKEND, RunContext
from services.gatekeeper import default_ruleset
from services.gatekeeper.handler import GatekeeperHandler
from services.planner.handler import PlannerHandler
from services.planner.rules_planner import plan_rules
from services.planner.skills import load_skills
from tests.support import fake_openai as fake
from tracebound.client import new_request
from tracebound.events import (
    AgentStep,
    EvidenceProduced,
    GatekeeperResult,
    PlanProduced,
    RetryContext,
    RetryRequested,
    ToolInvoked,
)
from tracebound.llm import LLMSettings, OpenAIChatModel

CPU_Q = "payment-service 当前是否有 HighCPUUsage 告警？"


@pytest.fixture
def server() -> Iterator[fake.FakeOpenAI]:
    with fake.FakeOpenAI() as srv:
        yield srv


def _model(server: fake.FakeOpenAI, timeout_s: float = 5.0) -> OpenAIChatModel:
    return OpenAIChatModel(
        LLMSettings(base_url=server.base_url, max_retries=0, timeout_s=timeout_s)
    )


def _plan(server: fake.FakeOpenAI, reply: fake.Entry) -> tuple[PlanProduced, list[AgentStep]]:
    server.script(reply)
    out = PlannerHandler(load_skills(), _model(server))(new_request(CPU_Q, language="zh"))
    plans = [e for e in out if isinstance(e, PlanProduced)]
    steps = [e for e in out if isinstance(e, AgentStep)]
    assert len(plans) == 1
    return plans[0], steps


def test_llm_planner_plan_and_agent_step(server: fake.FakeOpenAI) -> None:
    reply = {
        "selected_skill": "diagnose-high-cpu",
        "selection_reason": "HighCPUUsage alert named",
        "plan": ["query_metrics alert_name=HighCPUUsage service=payment-service"],
        "reasoning": "narrow confirmation",
        "scope_contract": {"must": "be dropped"},
    }
    plan, [step] = _plan(
        server, fake.text(json.dumps(reply), prompt_tokens=120, completion_tokens=40)
    )
    assert plan.plan.planner_mode == "llm"
    assert plan.plan.planner_plan.selected_skill == "diagnose-high-cpu"
    assert plan.plan.narrow_scope is True
    assert "scope_contract" not in plan.plan.planner_plan.model_dump()
    # The model writes the text; the calls recorded for the executor come from the skill.
    rules_plan, _skill = plan_rules(new_request(CPU_Q, language="zh").request, load_skills())
    assert plan.plan.execution is not None
    assert plan.plan.execution == rules_plan.execution
    assert [c.tool for c in plan.plan.execution.calls] == ["query_metrics"]
    assert {p.name for p in plan.prompt_audit.prompts} >= {"chat_planner", "diagnose-high-cpu"}
    assert (step.token_count, step.prompt_tokens, step.completion_tokens) == (160, 120, 40)
    assert step.success and step.duration_ms >= 0 and step.agent_name == "chat_planner"
    assert "You are the planner" not in step.model_input, "no system prompt in events"


@pytest.mark.parametrize(
    ("reply", "kind"),
    [
        pytest.param(fake.text("not json at all"), "invalid_output", id="malformed"),
        pytest.param(fake.status(500), "server_error", id="5xx"),
        pytest.param(fake.garbage(), "empty_reply", id="garbage"),
    ],
)
def test_llm_planner_falls_back_to_rules(
    server: fake.FakeOpenAI, reply: fake.Entry, kind: str
) -> None:
    plan, steps = _plan(server, reply)
    assert plan.plan.planner_mode == "rules-fallback"
    assert plan.plan.fallback is not None
    assert (plan.plan.fallback.role, plan.plan.fallback.kind) == ("planner", kind)
    assert plan.plan.execution is not None and plan.plan.execution.calls
    assert plan.plan.planner_plan.selected_skill == "diagnose-high-cpu"
    assert len(steps) == 1


def _cpu_plan() -> PlanProduced:
    [plan] = PlannerHandler(load_skills())(new_request(CPU_Q, language="zh"))
    assert isinstance(plan, PlanProduced)
    return plan


def _run_executor(server: fake.FakeOpenAI, *entries: fake.Entry, timeout_s: float = 5.0) -> list:  # type: ignore[type-arg]
    server.script(*entries)
    settings = ExecutorSettings(mode="llm")
    handler = ExecutorHandler(
        build_tools(ToolSettings.demo()), load_skills(), settings, _model(server, timeout_s)
    )
    return handler(_cpu_plan())


def test_llm_executor_tool_loop_produces_evidence_the_gatekeeper_passes(
    server: fake.FakeOpenAI,
) -> None:
    plan = _cpu_plan()
    params = {"alert_name": "HighCPUUsage", "service": "payment-service"}
    tool = build_tools(ToolSettings.demo())["query_metrics"]
    outcome = tool.run(tool.params_model.model_validate(params), RunContext(run_id=plan.run_id))
    [ref] = outcome.retrieval_details.evidence_refs
    final = {
        "answer_version": "executor_evidence_v2",
        "claims": [
            {
                "claim_id": "claim-1",
                "claim_type": "observation",
                "claim_text": "payment-service 当前存在 HighCPUUsage 告警，CPU 使用率为 92%。",
                "support_level": "direct",
                "evidence_bindings": [
                    {
                        "tool_name": "query_metrics",
                        "source_invocation_id": 1,  # the short index the model is shown
                        "raw_path": ref.raw_path,
                        "evidence_excerpt": ref.text.split(", threshold")[0],
                    }
                ],
            }
        ],
        "hypotheses": [],
        "recommended_actions": [],
        "missing_info": [],
    }
    # The planned call ran before the model was asked: one model turn writes the claims.
    server.script(fake.text(json.dumps(final, ensure_ascii=False)))
    handler = ExecutorHandler(
        build_tools(ToolSettings.demo()),
        load_skills(),
        ExecutorSettings(mode="llm"),
        _model(server),
    )
    out = handler(plan)
    evidence = [e for e in out if isinstance(e, EvidenceProduced)]
    invoked = [e for e in out if isinstance(e, ToolInvoked)]
    steps = [e for e in out if isinstance(e, AgentStep)]
    assert len(evidence) == 1 and len(invoked) == 1 and len(steps) == 1
    assert not steps[0].has_tool_call
    ev = evidence[0]
    assert ev.executor_output_parse_status.status == "valid"
    [claim] = ev.executor_structured_output["claims"]
    assert claim["claim_type"] == "observation"
    # The short index the model cited is the real invocation id again.
    assert claim["evidence_bindings"][0]["source_invocation_id"] == invocation_id(plan.run_id, 1, 0)
    call_turn, tool_msg = server.requests[0].messages[-2:]
    assert call_turn["tool_calls"][0]["function"]["name"] == "query_metrics"
    assert tool_msg["role"] == "tool" and ref.text in tool_msg["content"]
    assert json.loads(tool_msg["content"])["source_invocation_id"] == 1
    # The demo tools have no Prometheus: its tool is not offered, its planned call fails visibly.
    offered = [t["function"]["name"] for t in server.requests[0].tools or ()]
    assert offered == ["query_metrics", "query_logs", "lookup_knowledge"]
    [result] = GatekeeperHandler(default_ruleset())(ev)
    assert isinstance(result, GatekeeperResult)
    assert result.gatekeeper_result.status == "pass", result.gatekeeper_result.errors


def test_a_tool_without_a_backend_is_not_offered_to_the_model() -> None:
    tools = build_tools(
        ToolSettings(metrics_backend="request", logs_backend="none", prometheus_url=None)
    )
    assert {t.backend.name for t in tools.values()} >= {NO_BACKEND}
    specs = tool_specs(tools) or []
    assert [s["name"] for s in specs] == [
        name for name, tool in tools.items() if tool.backend.name != NO_BACKEND
    ]
    assert "query_logs" not in [s["name"] for s in specs]
    bare = {n: t for n, t in tools.items() if t.backend.name == NO_BACKEND}
    assert tool_specs(bare) is None


def test_llm_executor_unparseable_final_answer_is_recorded_not_crashed(
    server: fake.FakeOpenAI,
) -> None:
    out = _run_executor(server, fake.text("I think the CPU is high {broken json"))
    [ev] = [e for e in out if isinstance(e, EvidenceProduced)]
    assert ev.executor_output_parse_status.status == "invalid"
    assert ev.executor_structured_output is None
    assert ev.executor_final_answer.startswith("I think")


def test_llm_executor_prompt_states_a_retry_and_not_a_plan_it_shows_as_run(
    server: fake.FakeOpenAI,
) -> None:
    plan = _cpu_plan()
    retry = plan.reply(
        RetryRequested,
        "verifier",
        retry_context=RetryContext(round=2, reasons=("cite the alert's value",)),
        plan=plan.plan,
        request=plan.request,
    )
    for event in (plan, retry):
        server.script(fake.text("not json"))
        handler = ExecutorHandler(
            build_tools(ToolSettings.demo()),
            load_skills(),
            ExecutorSettings(mode="llm"),
            _model(server),
        )
        handler(event)
    first, again = (r.messages[0]["content"] for r in server.requests)
    assert "Retry context" not in first and "Plan:" not in first
    assert "Retry context" in again and "cite the alert's value" in again
    for step in plan.plan.planner_plan.plan:
        assert step not in first and step not in again


@pytest.mark.parametrize(
    ("entry", "kind"),
    [
        pytest.param(fake.status(503), "server_error", id="5xx"),
        pytest.param(
            fake.delay(3.0, fake.text("{}")), "timeout", id="timeout", marks=pytest.mark.slow
        ),
    ],
)
def test_llm_executor_falls_back_to_rules_when_the_model_fails(
    server: fake.FakeOpenAI, entry: fake.Entry, kind: str
) -> None:
    out = _run_executor(server, entry, timeout_s=1.0)
    [ev] = [e for e in out if isinstance(e, EvidenceProduced)]
    [step] = [e for e in out if isinstance(e, AgentStep)]
    assert not step.success and step.error_message
    status = ev.executor_output_parse_status
    assert "model failed" in status.detail
    assert status.fallback is not None and (status.fallback.role, status.fallback.kind) == (
        "executor",
        kind,
    )
    [claim] = ev.executor_structured_output["claims"]
    assert "92%" in claim["evidence_bindings"][0]["evidence_excerpt"]


def test_llm_executor_narrow_scope_drops_root_cause_claims(server: fake.FakeOpenAI) -> None:
    claims = [
        {
            "claim_id": f"claim-{i}",
            "claim_type": kind,
            "claim_text": "x",
            "support_level": "direct",
            "evidence_bindings": [],
        }
        for i, kind in enumerate(["observation", "root_cause", "observation", "observation"], 1)
    ]
    final = {
        "answer_version": "executor_evidence_v2",
        "claims": claims,
        "hypotheses": [],
        "recommended_actions": [],
        "missing_info": [],
    }
    out = _run_executor(server, fake.text(json.dumps(final)))
    [ev] = [e for e in out if isinstance(e, EvidenceProduced)]
    kinds = [c["claim_type"] for c in ev.executor_structured_output["claims"]]
    assert kinds == ["observation", "observation"]
    assert "narrow scope" in ev.executor_output_parse_status.detail
