"""Every role in ``llm`` mode against a server that behaves like real ones do.

One request per behaviour through the whole pipeline (real broker, the four
model roles as processes, one shared endpoint). For each, the model's intent is
used, or the evidence, the steps and the answer show the fallback and why —
never a draft or a fragment taken as the answer, a ``valid`` that was not, or a
REFUTED turned into PASS.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from tests.support import fake_openai as fake
from tests.support.kafka_io import Collector
from tests.support.pipeline import running_pipeline
from tests.support.routed_openai import RoutedFakeOpenAI
from tests.support.stack import StackHandle
from tracebound import topics
from tracebound.client import AnswerReader, new_request, publish
from tracebound.events import AgentStep, Event, EvidenceProduced, ToolInvoked

QUESTION = "payment-service 当前是否有 HighCPUUsage 告警？ case-{}"
CASES = ("tags", "json", "refusals", "length", "think")
# The plan's own query_metrics call (state firing) runs before the model is asked, so the
# model's calls ask for every state: a call of its own, not a duplicate the gate refuses.
PARAMS = {"alert_name": "HighCPUUsage", "service": "payment-service", "state": "all"}
OWN_CALLS = ("tags", "json", "refusals")
ROLES = ("planner", "executor", "verifier", "composer")


def _role(request: fake.RecordedRequest) -> str:
    system = str(request.messages[0].get("content", "")) if request.messages else ""
    return next((r for r in ROLES if f"You are the {r}" in system), "unknown")


def _case(request: fake.RecordedRequest) -> str:
    sent = json.dumps(request.messages, ensure_ascii=False)
    return next((c for c in CASES if f"case-{c}" in sent), "unknown")


def _evidence(request: fake.RecordedRequest) -> str:
    """executor_evidence_v2 citing, verbatim, the first ref the tools returned."""
    for message in request.messages:
        if message.get("role") != "tool":
            continue
        result = json.loads(str(message["content"]))
        refs = result.get("evidence_refs") or []  # the executor's compact tool result
        if refs:
            binding = {
                "tool_name": result["tool_name"],
                "source_invocation_id": result["source_invocation_id"],
                "raw_path": refs[0]["raw_path"],
                "evidence_excerpt": refs[0]["text"],
            }
            claim = {
                "claim_id": "claim-1",
                "claim_type": "observation",
                "claim_text": refs[0]["text"],
                "support_level": "direct",
                "evidence_bindings": [binding],
            }
            body = {"answer_version": "executor_evidence_v2", "claims": [claim]}
            return json.dumps(
                {**body, "hypotheses": [], "recommended_actions": [], "missing_info": []},
                ensure_ascii=False,
            )
    return json.dumps({"answer_version": "executor_evidence_v2", "claims": []})


def _own_results(request: fake.RecordedRequest) -> bool:
    """Results of the model's own calls (the planned calls' ids start with ``plan-``)."""
    return any(
        m.get("role") == "tool" and not str(m.get("tool_call_id", "")).startswith("plan-")
        for m in request.messages
    )


def _executor(case: str, request: fake.RecordedRequest) -> fake.Entry:
    if _own_results(request) or case not in OWN_CALLS:
        final = _evidence(request)
        return fake.truncated(final[: len(final) // 2]) if case == "length" else fake.text(final)
    if case == "tags":  # the repeat of an identical call is refused by the gate
        return fake.tool_calls_in_content(
            ("query_metrics", PARAMS), ("query_metrics", PARAMS), tags=True
        )
    if case == "json":
        return fake.tool_calls_in_content(("query_metrics", PARAMS))
    return fake.tool_calls(  # refusals
        ("query_metrics", PARAMS), ("drop_database", {}), ("query_logs", '{"query": ')
    )


def _verifier(case: str) -> fake.Entry:
    def judged(verdict: str, status: str) -> str:
        check = {"claim_id": "claim-1", "status": status, "reason": f"judged {status}"}
        return json.dumps({"verdict": verdict, "claim_checks": [check], "rationale": status})

    if case == "think":  # the draft in the thought passes; the answer refutes
        return fake.thinking(judged("REJECT", "REFUTED"), judged("PASS", "SUPPORTED"))
    return fake.text(judged("PASS", "SUPPORTED"))


def respond(request: fake.RecordedRequest) -> fake.Entry:
    role, case = _role(request), _case(request)
    if role == "planner":
        plan = {
            "selected_skill": "diagnose-high-cpu",
            "selection_reason": "the question names HighCPUUsage",
            "plan": ["query_metrics alert_name=HighCPUUsage service=payment-service"],
        }
        draft = {**plan, "plan": ["DRAFT step"]}
        return fake.thinking(json.dumps(plan), json.dumps(draft))
    if role == "executor":
        return _executor(case, request)
    if role == "verifier":
        return _verifier(case)
    answer = "The HighCPUUsage alert evidence was checked."
    return fake.text(json.dumps({"answer_summary": answer, "user_facing_answer": answer}))


def _of(events: list[Event], kind: type[Event], run_id: str) -> list[Any]:
    return [e for e in events if isinstance(e, kind) and e.run_id == run_id]


def test_each_server_behaviour_ends_in_the_models_intent_or_a_visible_fallback(
    stack: StackHandle, tmp_path: Path
) -> None:
    asked = {case: new_request(QUESTION.format(case), language="zh") for case in CASES}
    watched = {
        t: Collector(stack.kafka, t, from_end=True)
        for t in (topics.EVIDENCE, topics.AGENT_STEPS, topics.TOOL_INVOCATIONS)
    }
    reader = AnswerReader(stack.kafka)
    server = RoutedFakeOpenAI(respond).start()
    env = {f"TRACEBOUND_{r.upper()}_MODE": "llm" for r in ROLES}
    env.update(
        TRACEBOUND_LLM_BASE_URL=server.base_url,
        TRACEBOUND_LLM_MAX_RETRIES="0",
        TRACEBOUND_LLM_TIMEOUT_S="20",
    )
    try:
        with running_pipeline(stack, tmp_path, env):
            publish(stack.kafka, list(asked.values()))
            answers = reader.wait_for({r.run_id for r in asked.values()}, timeout_s=240)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not all(
                _of(watched[topics.EVIDENCE].events, EvidenceProduced, r.run_id)
                for r in asked.values()
            ):
                time.sleep(0.5)
    finally:
        server.stop()
        reader.close()
        for collector in watched.values():
            collector.close()
    assert set(answers) == {r.run_id for r in asked.values()}
    evidence, steps, invoked = (
        watched[t].events for t in (topics.EVIDENCE, topics.AGENT_STEPS, topics.TOOL_INVOCATIONS)
    )

    def of_case(case: str) -> tuple[Any, list[AgentStep], int]:
        run_id = asked[case].run_id
        [ev] = _of(evidence, EvidenceProduced, run_id)
        return ev, _of(steps, AgentStep, run_id), len(_of(invoked, ToolInvoked, run_id))

    for case in ("tags", "json"):  # the calls left in the text ran, and the status says so
        ev, run_steps, calls = of_case(case)
        status = ev.executor_output_parse_status
        assert status.status == "repaired" and "recovered" in status.detail, (case, status)
        assert calls == 2, (case, calls)  # the planned call, then the model's own
        assert any(
            "recovered" in s.model_output for s in run_steps if s.agent_name == "chat_executor"
        )
        assert answers[asked[case].run_id].verdict == "PASS", case

    ev, _steps, calls = of_case("refusals")  # unknown tool and bad arguments refused, visibly
    assert ev.executor_output_parse_status.status == "valid" and calls == 2
    refused = [
        json.loads(str(m["content"]))
        for r in server.requests
        if _case(r) == "refusals"
        for m in r.messages
        if m.get("role") == "tool"
    ]
    assert sum(1 for r in refused if r.get("refused")) >= 2, refused

    ev, run_steps, _calls = of_case("length")  # cut off: the rules output, and why
    assert "cut off at the token limit" in ev.executor_output_parse_status.detail
    assert any(s.finish_reason == "length" and not s.success for s in run_steps)
    assert ev.executor_structured_output and ev.executor_structured_output["claims"]

    _ev, run_steps, _calls = of_case("think")  # the REFUTED answer, not the passing draft
    assert answers[asked["think"].run_id].verdict == "REJECT"
    verifier_steps = [s for s in run_steps if s.agent_name == "chat_verifier"]
    assert verifier_steps and "SUPPORTED" in (verifier_steps[0].thought or "")
    planner_steps = [s for s in run_steps if s.agent_name == "chat_planner"]
    assert planner_steps and "DRAFT step" in (planner_steps[0].thought or "")
