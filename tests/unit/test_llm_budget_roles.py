"""Every role in llm mode with 200-line log results stays within an 8k context window.

The log backend answers every query with 200 long lines (the size a real Loki
returns for ``limit=200``); the model server is the scripted local one, reached
through the real ``openai`` client. Each request the server received is sized
with the same estimator the budget uses and must be within the window minus
the reply reserve; the cuts must be recorded, and the refs the model cites must
be refs it was shown — which the gatekeeper then accepts.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from bench.memory_tools import memory_tools
from services.composer.handler import ComposerHandler
from services.executor.handler import ExecutorHandler
from services.executor.ids import invocation_id
from services.executor.settings import ExecutorSettings
from services.executor.tools import ToolSettings, build_tools
from services.executor.tools.logs import LogPage, LogQuery, QueryLogsTool
from services.executor.tools.refs import log_text
from services.gatekeeper import default_ruleset
from services.gatekeeper.handler import GatekeeperHandler
from services.planner.handler import PlannerHandler
from services.planner.skills import load_skills
from services.verifier.handler import VerifierHandler, VerifierSettings
from tests.support import demo_evidence as demo
from tests.support import fake_openai as fake
from tracebound.client import new_request
from tracebound.events import (
    AgentStep,
    Alert,
    Answer,
    EvidenceProduced,
    GatekeeperResult,
    PlanProduced,
    PlanSnapshot,
    Verdict,
)
from tracebound.llm import LLMSettings, OpenAIChatModel, PromptBudget

WINDOW, REPLY = 8192, 1024
VERIFIER_WINDOW = 4096
LINES = 200
QUERY = "order-service 响应变慢，请排查 HikariCP 连接池超时的原因"
# Five searches, each narrower than the one before (the gate refuses widening).
TERMS = ("order-service HikariCP", "timeout", "pool", "checkout", "30000ms")
SEARCHES = [{"query": " ".join(TERMS[: i + 1]), "limit": LINES} for i in range(len(TERMS))]


def log_records(tag: str) -> list[dict[str, Any]]:
    """200 long log lines, as a Java service writes them when its pool runs dry."""
    message = (
        "HikariPool-1 - Connection is not available, request timed out after 30000ms "
        "(total=50, active=50, idle=0, waiting={n}) at com.zaxxer.hikari.pool.HikariPool."
        "createTimeoutException(HikariPool.java:696) at com.zaxxer.hikari.pool.HikariPool."
        "getConnection(HikariPool.java:197) at org.springframework.jdbc.datasource."
        "DataSourceUtils.fetchConnection(DataSourceUtils.java:159) request_id={tag}-{n:04d} "
        "path=/api/orders/checkout user_agent=checkout-web/4.2 " + "trace " * 20
    )
    return [
        {
            "timestamp": f"2026-12-02T03:{n // 60:02d}:{n % 60:02d}Z",
            "level": "ERROR",
            "service": "order-service",
            "instance": "order-service-7d9f",
            "message": message.format(n=n, tag=tag),
            "metrics": {"pool_wait_ms": 30000 + n},
        }
        for n in range(LINES)
    ]


class BigLogs:
    """A log backend that answers every search with 200 long lines."""

    layer = "loki"

    def __init__(self) -> None:
        self.calls = 0

    def search(self, query: LogQuery) -> LogPage:
        self.calls += 1
        return LogPage(records=log_records(f"q{self.calls}")[: query.limit], total=LINES * 3)


@pytest.fixture
def server() -> Iterator[fake.FakeOpenAI]:
    with fake.FakeOpenAI() as srv:
        yield srv


def chat_model(server: fake.FakeOpenAI, window: int = WINDOW) -> OpenAIChatModel:
    settings = LLMSettings(
        base_url=server.base_url,
        max_retries=0,
        timeout_s=5,
        model="qwen2.5:7b-instruct",
        context_window=window,
        max_tokens=REPLY,
    )
    return OpenAIChatModel(settings)


def assert_within_window(server: fake.FakeOpenAI, model: OpenAIChatModel) -> None:
    budget = PromptBudget.from_settings(model.settings)
    assert server.requests, "the model was asked"
    for request in server.requests:
        size = budget.estimate(request.messages, request.tools)
        assert size <= WINDOW - REPLY, f"a prompt of ~{size} tokens was sent"


def cuts(steps: list[AgentStep]) -> list[str]:
    return [s.model_input for s in steps if s.model_input.startswith("[budget ")]


def claim(n: int, invocation: int, path: str, excerpt: str) -> dict[str, Any]:
    binding = {
        "tool_name": "query_logs",
        "source_invocation_id": invocation,
        "raw_path": path,
        "evidence_excerpt": excerpt,
    }
    return {
        "claim_id": f"claim-{n}",
        "claim_type": "observation",
        "claim_text": "order-service 日志显示 HikariCP 连接池获取连接超时。",
        "support_level": "direct",
        "evidence_bindings": [binding],
    }


def shown_refs(request: fake.RecordedRequest) -> dict[tuple[int, str], str]:
    """(shown index, raw_path) → text of every ref the model was shown in one request."""
    shown = {}
    for message in request.messages:
        if message.get("role") != "tool":
            continue
        result = json.loads(message["content"])
        for ref in result.get("evidence_refs", ()):
            shown[(result["source_invocation_id"], ref["raw_path"])] = ref["text"]
    return shown


def planned_calls(plan: PlanSnapshot, tool: str | None = None) -> int:
    """How many calls (of ``tool``) the plan records: they run first and are shown as 1..n."""
    assert plan.execution is not None
    return sum(1 for c in plan.execution.calls if tool in (None, c.tool))


def run_executor(server: fake.FakeOpenAI) -> tuple[EvidenceProduced, list[AgentStep], Any]:
    [plan] = PlannerHandler(load_skills())(new_request(QUERY, language="zh"))
    assert isinstance(plan, PlanProduced)
    # The model sees each invocation by its index in call order; the planned calls go first.
    first = planned_calls(plan.plan) + 1
    ids = list(range(first, first + len(SEARCHES)))
    # BigLogs tags each search's lines by its call number; the planned searches came first.
    tag = planned_calls(plan.plan, "query_logs")
    texts = [log_text(r) for r in log_records(f"q{tag + 1}")[:3]]
    texts.append(log_text(log_records(f"q{tag + 5}")[0]))
    cited = [(ids[0], 0), (ids[0], 1), (ids[0], 2), (ids[4], 0)]
    claims = [
        claim(n, inv, f"$.logs[{i}]", text[:560])
        for n, ((inv, i), text) in enumerate(zip(cited, texts, strict=True), 1)
    ]
    final = demo.output(*claims)
    server.script(
        fake.tool_calls(*[("query_logs", search) for search in SEARCHES[:2]]),
        fake.tool_calls(*[("query_logs", search) for search in SEARCHES[2:]]),
        fake.text(json.dumps(final, ensure_ascii=False)),
    )
    model = chat_model(server)
    tools = dict(build_tools(ToolSettings.demo()))
    tools["query_logs"] = QueryLogsTool(BigLogs())
    # the plan's other calls run first too: the runbooks from memory, not PostgreSQL
    tools["lookup_knowledge"] = memory_tools()["lookup_knowledge"]
    # Room for the planned calls and the model's five searches in one round.
    settings = ExecutorSettings(mode="llm", max_calls_per_round=10)
    handler = ExecutorHandler(tools, load_skills(), settings, model)
    out = handler(plan)
    [evidence] = [e for e in out if isinstance(e, EvidenceProduced)]
    return evidence, [e for e in out if isinstance(e, AgentStep)], model


def passed_gate(evidence: EvidenceProduced) -> GatekeeperResult:
    """The gatekeeper's result on the executor's evidence, which must pass."""
    [result] = GatekeeperHandler(default_ruleset())(evidence)
    assert isinstance(result, GatekeeperResult)
    assert result.gatekeeper_result.status == "pass", result.gatekeeper_result.errors
    return result


def test_executor_with_200_line_logs_stays_in_the_window_and_cites_shown_refs(
    server: fake.FakeOpenAI,
) -> None:
    evidence, steps, model = run_executor(server)
    assert_within_window(server, model)
    # The planned calls ran first; the model's own two turns of calls add to them.
    assert len(steps) == 3 and all(s.success for s in steps)
    # Per call and per round: the model is told how much of the 200 refs it was shown,
    # and the three calls of the second turn share the round's cap.
    second_turn = [json.loads(m["content"]) for m in server.requests[2].messages[-3:]]
    first_turn = [json.loads(m["content"]) for m in server.requests[1].messages[-2:]]
    for result in first_turn + second_turn:
        truncated = result["truncated"]
        assert truncated["refs_total"] == LINES and 1 <= truncated["refs_shown"] < LINES
    assert second_turn[0]["truncated"]["refs_shown"] < first_turn[0]["truncated"]["refs_shown"]
    # The last prompt was over the window: the oldest results were cut first, the step says so.
    trimmed = cuts(steps)
    assert trimmed and "cut: tool result " in trimmed[-1]
    last = shown_refs(server.requests[-1])
    planned = planned_calls(evidence.plan)
    assert len(evidence.tool_trace) == planned + len(SEARCHES)
    searches = set(range(planned + 1, planned + len(SEARCHES) + 1))
    assert searches <= {inv for inv, _path in last}, "every search still shows a ref to cite"
    # Every ref the answer cites was shown to the model, and the gatekeeper accepts them;
    # the indexes the model cited are the invocation ids again.
    seen: dict[tuple[int, str], str] = {}
    for request in server.requests:
        seen.update(shown_refs(request))
    shown_as = {invocation_id(evidence.run_id, 1, k): k + 1 for k in range(planned + 5)}
    output = evidence.executor_structured_output
    assert isinstance(output, dict)
    for item in output["claims"]:
        [binding] = item["evidence_bindings"]
        key = (shown_as[binding["source_invocation_id"]], binding["raw_path"])
        assert key in seen and binding["evidence_excerpt"] in seen[key]
    assert passed_gate(evidence).gatekeeper_result.status == "pass"


def test_verifier_and_composer_fit_the_window_with_the_cut_in_the_trace(
    server: fake.FakeOpenAI,
) -> None:
    evidence, _steps, model = run_executor(server)
    gated = passed_gate(evidence)
    checks = [
        {"claim_id": c["claim_id"], "status": "SUPPORTED", "reason": "excerpt shows it"}
        for c in gated.executor_structured_output["claims"]
    ]
    server.requests.clear()
    server.script(
        fake.text(json.dumps({"verdict": "PASS", "claim_checks": checks, "rationale": "ok"}))
    )
    # The verifier shows each excerpt once: a window half the size needs its cuts.
    small_window = chat_model(server, window=VERIFIER_WINDOW)
    out = VerifierHandler(VerifierSettings(max_rounds=1), small_window)(gated)
    [verdict] = [e for e in out if isinstance(e, Verdict)]
    verifier_steps = [e for e in out if isinstance(e, AgentStep)]
    assert verdict.verifier_mode == "llm" and verdict.verdict == "PASS"
    assert_within_window(server, small_window)
    assert cuts(verifier_steps), "the verifier prompt needed trimming and the step says so"
    sent = json.dumps(server.requests[0].messages, ensure_ascii=False)
    assert QUERY in sent, "the question is never cut"

    server.requests.clear()
    answer = {
        "answer_summary": "order-service 的 HikariCP 连接获取超时。",
        "recommended_actions": [],
        "user_facing_answer": "order-service 日志显示 HikariCP 连接获取超时。",
    }
    server.script(fake.text(json.dumps(answer, ensure_ascii=False)))
    composed = ComposerHandler(model)(storm(verdict))
    assert isinstance(composed[0], Answer)
    assert composed[0].user_facing_answer == answer["user_facing_answer"]
    assert_within_window(server, model)
    assert QUERY in json.dumps(server.requests[0].messages, ensure_ascii=False)
    [step] = [e for e in composed if isinstance(e, AgentStep)]
    assert step.success and cuts([step]), "the composer cut is recorded"


def storm(verdict: Verdict) -> Verdict:
    """The verdict with fifteen times its allowed claims: a long investigation's material."""
    claims = verdict.composer_input.allowed_claims
    many = tuple(
        claim.model_copy(update={"claim_id": f"{claim.claim_id}-{k}"})
        for k in range(15)
        for claim in claims
    )
    material = verdict.composer_input.model_copy(update={"allowed_claims": many})
    return verdict.model_copy(update={"composer_input": material})


def test_planner_with_an_alert_storm_stays_in_the_window(server: fake.FakeOpenAI) -> None:
    lines = "\n".join(log_text(r) for r in log_records("alert")[:40])
    alerts = [
        Alert(
            status="firing",
            labels={"alertname": "HikariPoolExhausted", "service": f"svc-{i}-service"},
            annotations={"description": lines, "summary": f"pool exhausted on svc-{i}"},
        )
        for i in range(200)
    ]
    reply = {
        "selected_skill": None,
        "selection_reason": "pool exhaustion across services",
        "plan": ["query_logs query=HikariCP"],
        "reasoning": "covers the storm",
    }
    server.script(fake.text(json.dumps(reply)))
    model = chat_model(server)
    chat = new_request("HikariCP pool alerts", language="en")
    aiops = chat.request.model_copy(update={"mode": "AIOPS", "alerts": tuple(alerts)})
    request = chat.model_copy(update={"request": aiops})
    out = PlannerHandler(load_skills(), model)(request)
    [step] = [e for e in out if isinstance(e, AgentStep)]
    assert_within_window(server, model)
    assert step.success and step.model_input.startswith("[budget ")
    assert "alerts after the first 20 left out" in step.model_input
