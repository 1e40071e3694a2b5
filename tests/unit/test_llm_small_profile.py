"""The ``small`` profile shows a model less: what each role leaves out, and what it keeps."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Literal

import pytest

from services.executor.handler import ExecutorHandler
from services.executor.settings import ExecutorSettings
from services.executor.tools import ToolSettings, build_tools
from services.planner.handler import PlannerHandler
from services.planner.skills import load_skills
from services.verifier.handler import VerifierHandler, VerifierSettings
from services.verifier.prompt_view import SAME_AS_CLAIM
from tests.support import demo_evidence as demo
from tests.support import fake_openai as fake
from tests.unit.test_verifier_llm import gate_event, reply
from tracebound.client import new_request
from tracebound.events import (
    AgentStep,
    Alert,
    DiagnosisRequest,
    DiagnosisRequested,
    PlanProduced,
    Verdict,
)
from tracebound.llm import LLMSettings, OpenAIChatModel

NOW = datetime(2026, 5, 4, 10, 30, tzinfo=UTC)
Profile = Literal["small", "default"]
WRONG_CPU = "payment-service has a firing HighCPUUsage alert at 92% CPU, caused by a deploy."


@pytest.fixture
def server() -> Iterator[fake.FakeOpenAI]:
    with fake.FakeOpenAI() as srv:
        yield srv


def small_model(server: fake.FakeOpenAI, profile: Profile = "small") -> OpenAIChatModel:
    return OpenAIChatModel(
        LLMSettings(base_url=server.base_url, max_retries=0, timeout_s=5, profile=profile)
    )


def alert_run() -> DiagnosisRequested:
    alert = Alert(
        status="firing",
        labels={"alertname": "HighCPUUsage", "service": "payment-service"},
        startsAt="2026-05-04T10:00:00Z",
    )
    request = DiagnosisRequest(
        mode="AIOPS",
        query="Diagnose firing alerts: HighCPUUsage on payment-service",
        alerts=(alert,),
        requested_at=NOW,
    )
    base = new_request(request.query)
    return base.model_copy(update={"request": request})


def test_an_alert_run_whose_alerts_chose_the_skill_is_planned_without_a_call(
    server: fake.FakeOpenAI,
) -> None:
    out = PlannerHandler(load_skills(), small_model(server))(alert_run())
    [plan] = [e for e in out if isinstance(e, PlanProduced)]
    assert not server.requests, "a small model is not asked to reword a fixed skill"
    assert not [e for e in out if isinstance(e, AgentStep)]
    assert plan.plan.planner_mode == "rules"
    assert plan.plan.planner_plan.selected_skill == "diagnose-high-cpu"
    assert plan.plan.execution is not None and plan.plan.execution.calls


def test_a_question_still_asks_the_small_model_to_plan(server: fake.FakeOpenAI) -> None:
    answer = {
        "selected_skill": "diagnose-high-cpu",
        "selection_reason": "the question names the alert",
        "plan": ["query_metrics alert_name=HighCPUUsage"],
        "reasoning": "confirm it",
    }
    server.script(fake.text(json.dumps(answer)))
    question = new_request("Is there a HighCPUUsage alert on payment-service right now?")
    out = PlannerHandler(load_skills(), small_model(server))(question)
    [plan] = [e for e in out if isinstance(e, PlanProduced)]
    assert len(server.requests) == 1 and plan.plan.planner_mode == "llm"


@pytest.mark.parametrize("profile", ["small", "default"])
def test_the_executor_does_not_repeat_the_plan_its_calls_already_show(
    server: fake.FakeOpenAI, profile: Profile
) -> None:
    question = new_request("payment-service 当前是否有 HighCPUUsage 告警？")
    [plan] = PlannerHandler(load_skills())(question)
    assert isinstance(plan, PlanProduced)
    server.script(fake.text("not json"))
    handler = ExecutorHandler(
        build_tools(ToolSettings.demo()),
        load_skills(),
        ExecutorSettings(mode="llm"),
        small_model(server, profile),
    )
    handler(plan)
    system = server.requests[0].messages[0]["content"]
    assert "Plan:" not in system and "Retry context" not in system
    for step in plan.plan.planner_plan.plan:
        assert step not in system
    assert any(m.get("tool_calls") for m in server.requests[0].messages)


def test_the_small_verifier_sees_each_claim_once_with_its_excerpts_and_the_code_check(
    server: fake.FakeOpenAI,
) -> None:
    event = gate_event(demo.output(demo.claim("claim-1", "observation", WRONG_CPU, demo.CPU_ALERT)))
    server.script(reply("PASS", ("claim-1", "SUPPORTED")))
    out = VerifierHandler(VerifierSettings(max_rounds=1), small_model(server))(event)
    [verdict] = [e for e in out if isinstance(e, Verdict)]
    [step] = [e for e in out if isinstance(e, AgentStep)]
    assert step.agent_name == "chat_verifier_small"
    assert {p.name for p in verdict.prompt_audit.prompts} == {"chat_verifier_small"}
    system = server.requests[0].messages[0]["content"]
    claims = json.loads(system.split("<<<CLAIMS\n", 1)[1].split("\nCLAIMS>>>", 1)[0])
    [shown] = claims
    assert shown["claim_text"] == WRONG_CPU and shown["code"] != "SUPPORTED"
    assert shown["excerpts"] == [demo.CPU_ALERT["evidence_excerpt"]]
    assert system.count(demo.CPU_ALERT["evidence_excerpt"]) == 1
    # Judging a claim against its excerpts needs no question.
    assert event.original_query not in system
    assert "executor_structured_output" not in system
    # The model's "SUPPORTED" cannot lift what the code did not establish.
    assert verdict.verdict != "PASS" and verdict.claim_checks[0].status != "SUPPORTED"


def test_the_small_verifier_shows_an_excerpt_that_is_its_claim_text_once(
    server: fake.FakeOpenAI,
) -> None:
    excerpt = demo.CPU_ALERT["evidence_excerpt"]
    event = gate_event(demo.output(demo.claim("claim-1", "observation", excerpt, demo.CPU_ALERT)))
    server.script(reply("PASS", ("claim-1", "SUPPORTED")))
    VerifierHandler(VerifierSettings(max_rounds=1), small_model(server))(event)
    system = server.requests[0].messages[0]["content"]
    [shown] = json.loads(system.split("<<<CLAIMS\n", 1)[1].split("\nCLAIMS>>>", 1)[0])
    assert shown["claim_text"] == excerpt and shown["excerpts"] == [SAME_AS_CLAIM]
    assert system.count(excerpt) == 1 and f"`{SAME_AS_CLAIM}`" in system


def test_the_small_verifier_may_still_lower_a_claim(server: fake.FakeOpenAI) -> None:
    text = "payment-service has a firing HighCPUUsage alert at 92% CPU."
    event = gate_event(demo.output(demo.claim("claim-1", "observation", text, demo.CPU_ALERT)))
    server.script(reply("REJECT", ("claim-1", "REFUTED")))
    out = VerifierHandler(VerifierSettings(max_rounds=1), small_model(server))(event)
    [verdict] = [e for e in out if isinstance(e, Verdict)]
    assert verdict.verifier_mode == "llm"
    assert (verdict.verdict, verdict.claim_checks[0].status) == ("REJECT", "REFUTED")
