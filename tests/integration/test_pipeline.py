"""The whole pipeline on the real broker and database: five processes, rules mode."""

from __future__ import annotations

import copy
import re
import time
from collections import Counter
from pathlib import Path

import httpx

from tests.support.evidence_events import evidence_event
from tests.support.kafka_io import Collector
from tests.support.pipeline import running_pipeline
from tests.support.prometheus import free_port
from tests.support.stack import StackHandle
from tracebound import topics
from tracebound.client import AnswerReader, new_request, publish
from tracebound.events import (
    Answer,
    DiagnosisRequest,
    Event,
    EvidenceProduced,
    PlannerPlan,
    PlanSnapshot,
    RetryRequested,
)

CPU_ZH = "payment-service 当前是否有 HighCPUUsage 告警？"
HIKARI_ZH = "inventory-service 是否有 HikariCP 连接池耗尽日志？"
HIKARI_EN = "Are there HikariCP pool exhaustion logs for inventory-service?"
BROAD = "Why is order-service using so much memory? Please analyse it."
OVERCLAIMS = (
    "问题不存在",
    "已排除",
    "确认没有",
    "日志层面已排除",
    "ruled out",
    "not the cause",
    "is healthy",
)


def _evidence(events: list[Event], run_id: str) -> list[EvidenceProduced]:
    return [e for e in events if isinstance(e, EvidenceProduced) and e.run_id == run_id]


def test_seed_samples_and_a_broad_question(stack: StackHandle, tmp_path: Path) -> None:
    asked = {
        "cpu": new_request(CPU_ZH, language="zh"),
        "hikari_zh": new_request(HIKARI_ZH, language="zh"),
        "hikari_en": new_request(HIKARI_EN, language="en"),
        "broad": new_request(BROAD, language="en"),
    }
    evidence = Collector(stack.kafka, topics.EVIDENCE)
    reader = AnswerReader(stack.kafka)
    with running_pipeline(stack, tmp_path):
        publish(stack.kafka, list(asked.values()))
        answers = reader.wait_for({e.run_id for e in asked.values()}, timeout_s=180)
        time.sleep(2)
    reader.close()
    evidence.close()
    assert set(answers) == {e.run_id for e in asked.values()}
    cpu = answers[asked["cpu"].run_id]
    assert cpu.verdict == "PASS" and cpu.final_status == "answered"
    assert "payment-service" in cpu.user_facing_answer and "92%" in cpu.user_facing_answer
    for other in ("order-service", "user-service", "91%", "4.2s"):
        assert other not in cpu.user_facing_answer, "no claim outside the question's scope"
    [cpu_round] = _evidence(evidence.events, asked["cpu"].run_id)
    [claim] = cpu_round.executor_structured_output["claims"]
    [binding] = claim["evidence_bindings"]
    assert claim["claim_type"] == "observation"
    assert re.fullmatch(r"\$\.alerts\[\d+\]", binding["raw_path"])
    assert "92%" in binding["evidence_excerpt"]
    ids = {inv.source_invocation_id: inv for inv in cpu_round.tool_trace}
    assert ids[binding["source_invocation_id"]].tool_name == "query_metrics"
    for key, marker in (("hikari_zh", "未检索到"), ("hikari_en", "no matching evidence")):
        answer = answers[asked[key].run_id]
        assert answer.verdict == "PASS", answer.user_facing_answer
        assert marker in answer.user_facing_answer
        assert not any(p in answer.user_facing_answer for p in OVERCLAIMS)
        [round_1] = _evidence(evidence.events, asked[key].run_id)
        [negative] = round_1.executor_structured_output["claims"]
        assert negative["claim_type"] == "negative_observation"
        assert negative["evidence_bindings"][0]["raw_path"] == "$.no_evidence"
        assert [i.tool_name for i in round_1.tool_trace] == ["query_logs"], "no widened query"
    broad = answers[asked["broad"].run_id]
    assert broad.verdict in ("PASS", "LOW_CONFID") and broad.user_facing_answer


def test_every_request_gets_exactly_one_answer(stack: StackHandle, tmp_path: Path) -> None:
    questions = [CPU_ZH, HIKARI_ZH, HIKARI_EN, BROAD, "user-service 是否有 SlowResponse 告警？"]
    asked = [new_request(q, language="en") for q in questions * 4]
    with running_pipeline(stack, tmp_path):
        reader = AnswerReader(stack.kafka)
        publish(stack.kafka, list(asked))
        wanted = {e.run_id for e in asked}
        seen: Counter[str] = Counter()
        deadline = time.monotonic() + 240
        for answer in reader.answers(timeout_s=240):
            if answer.run_id in wanted:
                seen[answer.run_id] += 1
            if len(seen) == len(wanted) or time.monotonic() > deadline:
                break
        # keep reading a little: a duplicate answer would show up now
        for answer in reader.answers(timeout_s=5):
            if answer.run_id in wanted:
                seen[answer.run_id] += 1
        reader.close()
    assert set(seen) == wanted
    assert set(seen.values()) == {1}


def test_low_confidence_round_gets_a_second_round_then_one_answer(
    stack: StackHandle, tmp_path: Path
) -> None:
    """Round 1 carries a claim its excerpt cannot fully support (NOT_ENOUGH_INFO).

    The verifier asks for round 2; the rules executor re-collects the evidence and
    states only what it shows, so the second round passes and stands.
    """
    from tests.support import demo_evidence

    scenario = demo_evidence.scenarios()[0]
    unsupported = copy.deepcopy(scenario.structured_output)
    unsupported["claims"][0]["claim_text"] += " RedisCommandTimeoutException was seen too."
    event = evidence_event(unsupported, scenario.tool_invocations, query=CPU_ZH)
    event = event.model_copy(
        update={
            "request": DiagnosisRequest(mode="CHAT", query=CPU_ZH, language="zh"),
            "plan": PlanSnapshot(
                planner_plan=PlannerPlan(
                    selected_skill="diagnose-high-cpu",
                    selection_reason="test",
                    plan=("query_metrics",),
                    reasoning="test",
                ),
                narrow_scope=True,
            ),
        }
    )
    retries = Collector(stack.kafka, topics.RETRIES)
    evidence = Collector(stack.kafka, topics.EVIDENCE)
    reader = AnswerReader(stack.kafka)
    with running_pipeline(stack, tmp_path):
        publish(stack.kafka, [event])
        answers = reader.wait_for({event.run_id}, timeout_s=180)
        time.sleep(3)
        more = reader.wait_for({event.run_id}, timeout_s=3)
    reader.close()
    retries.close()
    evidence.close()
    [retry] = [
        r for r in retries.events if isinstance(r, RetryRequested) and r.run_id == event.run_id
    ]
    assert retry.retry_context.round == 2
    assert retry.retry_context.failed_claims
    rounds = sorted(e.round for e in _evidence(evidence.events, event.run_id))
    assert rounds == [1, 2]
    assert set(answers) == {event.run_id} and not more, "exactly one answer"
    answer: Answer = answers[event.run_id]
    assert (answer.round, answer.verdict) == (2, "PASS")
    assert "RedisCommandTimeoutException" not in answer.user_facing_answer


def test_llm_mode_with_the_model_endpoint_down_still_answers_and_says_so(
    stack: StackHandle, tmp_path: Path
) -> None:
    model_roles = ("planner", "executor", "verifier", "composer")
    ports = {role: free_port() for role in model_roles}
    env = {f"TRACEBOUND_{role.upper()}_MODE": "llm" for role in model_roles}
    env |= {f"TRACEBOUND_{role.upper()}_METRICS_PORT": str(ports[role]) for role in model_roles}
    env |= {
        "TRACEBOUND_LLM_BASE_URL": "http://127.0.0.1:9/v1",
        "TRACEBOUND_LLM_MAX_RETRIES": "0",
        "TRACEBOUND_LLM_TIMEOUT_S": "2",
    }
    asked = [new_request(CPU_ZH, language="zh"), new_request(HIKARI_EN, language="en")]
    reader = AnswerReader(stack.kafka)
    with running_pipeline(stack, tmp_path, env):
        publish(stack.kafka, asked)
        answers = reader.wait_for({e.run_id for e in asked}, timeout_s=180)
        scraped = {
            role: httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
            for role, port in ports.items()
        }
    reader.close()
    assert set(answers) == {e.run_id for e in asked}
    assert all(a.verdict == "PASS" for a in answers.values())
    # Answered from rules, and impossible to miss: on the answer, in /metrics, in the log.
    for answer in answers.values():
        assert [(f.role, f.kind) for f in answer.fallbacks] == [
            (role, "connection") for role in model_roles
        ]
    for role, text in scraped.items():
        counted = f'tracebound_llm_fallbacks_total{{kind="connection",role="{role}"}} '
        [line] = [x for x in text.splitlines() if x.startswith(counted)]
        assert float(line.removeprefix(counted)) >= len(asked)  # a rewound batch counts again
        log = (tmp_path / "services" / f"{role}.log").read_text(encoding="utf-8")
        assert log.count(f"{role}: rules fallback because: connection") == 1, log
