"""The one llm→rules decision: what it records, counts and logs, for every role."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest
from prometheus_client import generate_latest
from pydantic import BaseModel

from replay.chain import Chain
from services.executor.tools import ToolSettings, build_tools
from tests.support import fake_openai as fake
from tracebound.client import new_request
from tracebound.events import AgentStep, ModelFallback
from tracebound.llm import LLMSettings, ModelError, ModelReply, OpenAIChatModel, StepRecorder
from tracebound.llm.fallback import FALLBACK, LLM, RULES, ReplyRejected, decide
from tracebound.llm.monitor import FallbackMonitor
from tracebound.runtime.metrics import ServiceMetrics
from tracebound.topology import MODEL_ROLES

CPU_Q = "payment-service 当前是否有 HighCPUUsage 告警？"
ROLES = list(MODEL_ROLES)


class _Failing:
    """A chat model whose endpoint always fails with ``kind``."""

    name = "failing"

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        json_mode: bool = False,
        schema: type[BaseModel] | None = None,
    ) -> ModelReply:
        raise ModelError(f"scripted {self.kind}", kind=self.kind)


def _recorder(kind: str = "timeout") -> StepRecorder:
    return StepRecorder(_Failing(kind), run_id="run-1", agent_name="a", service="planner")


def _ask(rec: StepRecorder) -> str:
    rec.complete([{"role": "user", "content": "q"}])
    return "model"


def test_without_a_model_the_rules_decide_and_nothing_is_counted() -> None:
    monitor = FallbackMonitor()
    decision = decide("planner", None, _ask, lambda: "rules", monitor)
    assert (decision.value, decision.mode, decision.fallback) == ("rules", RULES, None)
    assert monitor.decisions() == {} and monitor.fallbacks() == {}


def test_endpoint_trouble_falls_back_with_its_kind_and_the_failed_step() -> None:
    monitor = FallbackMonitor()
    decision = decide("planner", _recorder("timeout"), _ask, lambda: "rules", monitor)
    assert (decision.value, decision.mode) == ("rules", FALLBACK)
    assert decision.fallback == ModelFallback(
        role="planner", kind="timeout", reason="scripted timeout"
    )
    [step] = decision.steps
    assert isinstance(step, AgentStep) and not step.success
    assert monitor.fallbacks() == {("planner", "timeout"): 1}


def test_an_unusable_reply_falls_back_as_invalid_output() -> None:
    def rejected(_rec: StepRecorder) -> str:
        raise ReplyRejected("plan: field required")

    decision = decide("planner", _recorder(), rejected, lambda: "rules", FallbackMonitor())
    assert decision.fallback is not None
    assert (decision.fallback.kind, decision.fallback.reason) == (
        "invalid_output",
        "plan: field required",
    )
    assert decision.fallback.describe() == (
        "planner: rules fallback because: invalid_output: plan: field required"
    )


def test_a_bug_in_the_model_path_is_not_hidden_by_a_fallback() -> None:
    def broken(_rec: StepRecorder) -> str:
        raise KeyError("bug")

    with pytest.raises(KeyError):
        decide("planner", _recorder(), broken, lambda: "rules", FallbackMonitor())


def test_a_cause_is_logged_once_again_on_change_and_after_recovery(
    caplog: pytest.LogCaptureFixture,
) -> None:
    monitor = FallbackMonitor()
    timeout = ModelFallback(role="executor", kind="timeout", reason="timed out")
    refused = ModelFallback(role="executor", kind="http_status", reason="HTTP 400")
    with caplog.at_level(logging.INFO, logger="tracebound.llm.fallback"):
        for _ in range(500):
            monitor.fell_back(timeout)
        monitor.fell_back(refused)
        monitor.fell_back(refused)
        monitor.answered("executor")
        monitor.answered("executor")
        monitor.fell_back(timeout)
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 4, lines
    assert lines[0].startswith("executor: rules fallback because: timeout: timed out")
    assert lines[1].startswith("executor: rules fallback because: http_status: HTTP 400")
    assert "answers again after 2 rules fallback(s) because of http_status" in lines[2]
    assert lines[3].startswith("executor: rules fallback because: timeout")
    assert monitor.fallbacks() == {("executor", "timeout"): 501, ("executor", "http_status"): 2}
    assert monitor.decisions() == {("executor", "rules-fallback"): 503, ("executor", "llm"): 2}


def test_the_counts_are_served_with_the_service_metrics() -> None:
    metrics, monitor = ServiceMetrics("planner"), FallbackMonitor()
    metrics.registry.register(monitor)
    monitor.fell_back(ModelFallback(role="planner", kind="timeout"))
    monitor.answered("planner")
    text = generate_latest(metrics.registry).decode()
    assert 'tracebound_llm_fallbacks_total{kind="timeout",role="planner"} 1.0' in text
    assert 'tracebound_llm_decisions_total{mode="llm",role="planner"} 1.0' in text
    assert 'tracebound_llm_decisions_total{mode="rules-fallback",role="planner"} 1.0' in text


@pytest.fixture
def gone() -> Iterator[fake.FakeOpenAI]:
    with fake.FakeOpenAI(default=fake.status(500)) as srv:
        yield srv


def test_an_endpoint_gone_shows_in_the_answer_metrics_and_one_log_line_per_role(
    gone: fake.FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    model = OpenAIChatModel(LLMSettings(base_url=gone.base_url, max_retries=0, timeout_s=2.0))
    chain = Chain.build(build_tools(ToolSettings.demo()), model=model)
    with caplog.at_level(logging.WARNING, logger="tracebound.llm.fallback"):
        first = chain.run(new_request(CPU_Q, language="zh"))
        second = chain.run(new_request(CPU_Q, language="zh"))
    for result in (first, second):
        assert result.answer is not None and result.answer.verdict == "PASS"
        assert [(f.role, f.kind) for f in result.answer.fallbacks] == [
            (role, "server_error") for role in ROLES
        ]
        assert all("HTTP 500" in f.reason for f in result.answer.fallbacks)
    monitor = chain.planner.monitor
    assert monitor.fallbacks() == {(role, "server_error"): 2 for role in ROLES}
    assert sorted(r.getMessage().split(":")[0] for r in caplog.records) == sorted(ROLES)


def test_rules_mode_is_not_a_fallback() -> None:
    chain = Chain.build(build_tools(ToolSettings.demo()))
    result = chain.run(new_request(CPU_Q, language="zh"))
    assert result.answer is not None and result.answer.fallbacks == ()
    assert result.verdict is not None and result.verdict.verifier_mode == RULES
    assert chain.planner.monitor.decisions() == {}


def test_a_model_that_answers_again_is_counted_as_llm() -> None:
    monitor = FallbackMonitor()
    decide("planner", _recorder(), _ask, lambda: "rules", monitor)

    def fine(_rec: StepRecorder) -> str:
        return "model"

    decision = decide("planner", _recorder(), fine, lambda: "rules", monitor)
    assert (decision.value, decision.mode, decision.fallback) == ("model", LLM, None)
    assert monitor.decisions() == {("planner", "rules-fallback"): 1, ("planner", "llm"): 1}
