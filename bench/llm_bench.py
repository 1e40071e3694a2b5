"""The pipeline in ``llm`` mode against a local model server that takes a fixed time per call.

Every role with a model (planner, executor, verifier, composer) runs in ``llm``
mode, one process each, against the scripted OpenAI-compatible server of the
tests (``tests/support/fake_openai.py``, a thread per request), which answers
every call after ``delay_s``. Its replies follow the path a capable model takes:
the planner picks the skill the question calls for, the executor calls the
planned tools in one turn and then reports claims bound to the evidence refs the
tools returned, the verifier supports every claim, and the composer states the
allowed claims. So the figure measures how many runs the roles keep in flight,
not how fast a model is.

A burst of requests goes in at once and the answers are read back, as in the
rules-mode pipeline figure; it is run twice in the same bench run, with each
role's default concurrency and with one call at a time (the baseline). Group
rebalances during a burst are counted from the roles' logs: a batch that took
longer than the poll interval would show up there.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from bench import pipeline_bench, processes
from bench.pipeline_bench import QUESTIONS
from bench.report import log
from services.planner.rules_planner import plan_rules
from services.planner.skills import load_skills
from tests.support import fake_openai as fake
from tracebound.client import new_request
from tracebound.codec import make_codec
from tracebound.settings import KafkaSettings
from tracebound.topology import MODEL_ROLES

LLM_ROLES = MODEL_ROLES
NO_EVIDENCE = "$.no_evidence"
REBALANCE_MARKS = ("partitions revoked", "partitions lost")
_CLAIM_IDS = re.compile(r'"claim_id":\s*"([^"]{1,100})"')
_CLAIM_TEXTS = re.compile(r'"claim_text":\s*"((?:[^"\\]|\\.){1,2000})"')


@cache
def _planned(query: str) -> tuple[str | None, tuple[tuple[str, dict[str, Any]], ...]]:
    """The skill and tool calls the rules planner gives a question: what the model 'chooses'."""
    question = next((q for q in QUESTIONS if q[0] == query), (query, "en"))
    plan, skill = plan_rules(new_request(question[0], language=question[1]).request, load_skills())
    calls = plan.execution.calls if plan.execution is not None else ()
    return (skill.name if skill else None), tuple((c.tool, dict(c.params)) for c in calls)


def _system(body: Mapping[str, Any]) -> str:
    messages = body.get("messages") or [{}]
    return str(messages[0].get("content") or "")


def _query(body: Mapping[str, Any]) -> str:
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    return str(users[0].get("content") or "") if users else ""


def _planner(body: Mapping[str, Any]) -> fake.Entry:
    skill, calls = _planned(_query(body))
    plan = [f"{tool} {json.dumps(params, ensure_ascii=False)}" for tool, params in calls]
    reply = {
        "selected_skill": skill,
        "selection_reason": "the question names it",
        "plan": plan or ["lookup_knowledge for the question"],
        "reasoning": "follow the skill",
    }
    return fake.text(json.dumps(reply, ensure_ascii=False), prompt_tokens=900, completion_tokens=80)


def _executor(body: Mapping[str, Any]) -> fake.Entry:
    results = [m for m in body.get("messages", []) if m.get("role") == "tool"]
    if not results:
        _skill, calls = _planned(_query(body))
        return fake.tool_calls(*calls) if calls else fake.tool_call("lookup_knowledge", {})
    claims: list[dict[str, Any]] = []
    for message in results:
        result = json.loads(message.get("content") or "{}")
        refs = result.get("evidence_refs") or []
        if result.get("success") is False or not refs:
            continue
        ref = refs[0]
        claims.append(
            {
                "claim_id": f"claim-{len(claims) + 1}",
                "claim_type": (
                    "negative_observation" if ref["raw_path"] == NO_EVIDENCE else "observation"
                ),
                "claim_text": ref["text"],
                "support_level": "direct",
                "evidence_bindings": [
                    {
                        "tool_name": result["tool_name"],
                        "source_invocation_id": result["source_invocation_id"],
                        "raw_path": ref["raw_path"],
                        "evidence_excerpt": ref["text"],
                    }
                ],
            }
        )
    answer = {
        "answer_version": "executor_evidence_v2",
        "claims": claims[:2],
        "hypotheses": [],
        "recommended_actions": [],
        "missing_info": [] if claims else ["no tool returned evidence"],
    }
    return fake.text(
        json.dumps(answer, ensure_ascii=False), prompt_tokens=4600, completion_tokens=300
    )


def _verifier(body: Mapping[str, Any]) -> fake.Entry:
    ids = sorted(set(_CLAIM_IDS.findall(_system(body))))
    reply = {
        "verdict": "PASS",
        "groundedness_score": 1.0,
        "critical_fact_count": len(ids),
        "claim_checks": [
            {"claim_id": i, "status": "SUPPORTED", "reason": "in the excerpt"} for i in ids
        ],
        "facts_checked": [],
        "rationale": "every claim follows from its excerpt",
    }
    return fake.text(json.dumps(reply), prompt_tokens=6000, completion_tokens=120)


def _composer(body: Mapping[str, Any]) -> fake.Entry:
    texts = [json.loads(f'"{t}"') for t in _CLAIM_TEXTS.findall(_system(body))]
    answer = " ".join(texts[:2]) or "No verified finding."
    reply = {"answer_summary": answer, "recommended_actions": [], "user_facing_answer": answer}
    return fake.text(
        json.dumps(reply, ensure_ascii=False), prompt_tokens=2500, completion_tokens=150
    )


ROLE_REPLIES = {
    "You are the planner": _planner,
    "You are the executor": _executor,
    "You are the verifier": _verifier,
    "You are the composer": _composer,
}


def scripted_reply(body: Mapping[str, Any]) -> fake.Entry:
    """The reply a capable model gives this request, by the role its system prompt names."""
    system = _system(body)
    for mark, reply in ROLE_REPLIES.items():
        if mark in system:
            return reply(body)
    return fake.text("unknown role")


def rebalances(folder: Path) -> int:
    """Revocations and losses of partitions logged by the roles so far."""
    total = 0
    for path in (folder / "services").glob("*.log"):
        text = path.read_text(encoding="utf-8", errors="replace")
        total += sum(text.count(mark) for mark in REBALANCE_MARKS)
    return total


def burst(
    kafka: KafkaSettings,
    stack_env: Mapping[str, str],
    count: int,
    delay_s: float,
    concurrency: int | None,
) -> dict[str, Any]:
    """``count`` requests at once through the roles in ``llm`` mode; throughput and latency."""
    server = fake.FakeOpenAI(
        responder=lambda body: fake.delay(delay_s, scripted_reply(body)), record=False
    ).start()
    env = {f"TRACEBOUND_{r.upper()}_MODE": "llm" for r in LLM_ROLES}
    env.update(TRACEBOUND_LLM_BASE_URL=server.base_url, TRACEBOUND_LLM_MAX_RETRIES="0")
    if concurrency is not None:
        env.update({f"TRACEBOUND_{r.upper()}_CONCURRENCY": str(concurrency) for r in LLM_ROLES})
    codec = make_codec(kafka)
    try:
        with processes.running_roles(stack_env, env) as roles:
            warm = pipeline_bench.warm_up(kafka, codec, timeout_s=300)
            before, calls_before = rebalances(roles.folder), server.served
            log(f"llm: roles warm after {warm:.1f}s; burst of {count}")
            result = pipeline_bench.burst(kafka, codec, count, roles.pids())
            result["rebalances"] = rebalances(roles.folder) - before
            result["model_calls_per_request"] = round(
                (server.served - calls_before) / max(count, 1), 2
            )
    finally:
        server.stop()
    result["concurrency"] = concurrency if concurrency is not None else "default"
    result["warm_up_seconds"] = round(warm, 2)
    return result


def run(
    kafka: KafkaSettings,
    stack_env: Mapping[str, str],
    requests: int,
    baseline_requests: int,
    delay_s: float,
) -> dict[str, Any]:
    """The burst with the roles' default concurrency, then the one-at-a-time baseline."""
    runs: dict[str, Any] = {"delay_s": delay_s}
    for name, count, concurrency in (
        ("concurrent", requests, None),
        ("baseline", baseline_requests, 1),
    ):
        log(f"llm {name}: {count} requests, model answers after {delay_s:g}s")
        runs[name] = burst(kafka, stack_env, count, delay_s, concurrency)
    return runs
