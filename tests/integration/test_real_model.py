"""The whole pipeline in ``llm`` mode against a real model server: llama.cpp's
``llama-server`` (built from the llama-cpp-python sdist) serving SmolLM2-135M-Instruct.

An alert and two questions (one Chinese) go through the four model roles. Every
request is answered; each role's outcome on each run is recorded (its model output
used, repaired, or fallen back with a reason); no prompt the server was sent
exceeds its window by the server's own count; and a claim the answer states as
verified is one the deterministic checks support. ``tracebound doctor`` reads the
server's real window and slots. A 135M model is weaker than anything deployed:
the test holds the pipeline to its promises, not the model to good answers.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

import pytest

from services.verifier.input import input_from_event
from services.verifier.judge import verify
from services.verifier.rules_file import default_overclaim_phrases, load_verifier_rules
from tests.support.kafka_io import Collector
from tests.support.llama_server import MODEL_NAME, Built, ensure_built, llama_server
from tests.support.pipeline import running_pipeline
from tests.support.stack import StackHandle
from tracebound import topics
from tracebound.client import AnswerReader, new_request, publish
from tracebound.events import (
    AgentStep,
    Alert,
    Answer,
    DiagnosisRequest,
    DiagnosisRequested,
    Event,
    GatekeeperResult,
    Verdict,
)
from tracebound.events import Producer as ProducerRef
from tracebound.topology import MODEL_ROLES

E = TypeVar("E", bound=Event)
ANSWER_S = 900.0
PER_SLOT = 4096


@pytest.fixture(scope="module")
def built() -> Built:
    found = ensure_built()
    if isinstance(found, str):
        pytest.skip(f"llama-server could not be built or the model fetched here: {found}")
    return found


def _env(base_url: str) -> dict[str, str]:
    env = {f"TRACEBOUND_{role.upper()}_MODE": "llm" for role in MODEL_ROLES}
    env.update(
        TRACEBOUND_LLM_BASE_URL=base_url,
        TRACEBOUND_LLM_MODEL=MODEL_NAME,
        TRACEBOUND_LLM_CONTEXT_WINDOW=str(PER_SLOT),
        TRACEBOUND_LLM_MAX_TOKENS="384",
        TRACEBOUND_LLM_PROFILE="small",  # a 4k-per-slot server on a loaded 2-core machine
        TRACEBOUND_LLM_MAX_RETRIES="0",
        TRACEBOUND_LLM_TIMEOUT_S="240",
    )
    return env


def _alert() -> DiagnosisRequested:
    alert = Alert(
        status="firing",
        labels={"alertname": "HighCPUUsage", "service": "payment-service", "severity": "warning"},
        annotations={
            "summary": "CPU usage above 80%",
            "description": "CPU usage of payment-service is 92% (threshold 80%)",
        },
        startsAt="2026-12-05T12:00:00Z",
    )
    return DiagnosisRequested(
        run_id=new_request("x").run_id,
        producer=ProducerRef(service="test"),
        request=DiagnosisRequest(
            mode="AIOPS",
            query="HighCPUUsage on payment-service",
            alerts=(alert,),
            requested_at=datetime.now(UTC),
        ),
    )


def test_doctor_reads_the_real_window_and_slots(
    built: Built, stack: StackHandle, tmp_path: Path
) -> None:
    with llama_server(built, tmp_path / "llama.log") as server:
        env = {**stack.env(), **_env(server.base_url)}
        done = subprocess.run(
            [str(Path(sys.executable).parent / "tracebound"), "doctor", "--json"],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    report = json.loads(done.stdout)
    checks = {c["name"]: c for c in report["checks"]}
    window = checks["context_window"]
    assert f"{PER_SLOT} tokens" in window["detail"] and "2 slot(s)" in window["detail"], window
    assert checks["tokenizer"]["detail"].startswith("llama.cpp counts prompts"), checks["tokenizer"]


def test_an_alert_and_two_questions_through_a_real_model(
    built: Built, stack: StackHandle, tmp_path: Path
) -> None:
    asked: list[DiagnosisRequested] = [
        _alert(),
        new_request("Is payment-service firing a HighCPUUsage alert?", language="en"),
        new_request("order-service 是否有 HighMemoryUsage 告警？", language="zh"),
    ]
    steps = Collector(stack.kafka, topics.AGENT_STEPS, from_end=True)
    verdicts = Collector(stack.kafka, topics.VERDICTS, from_end=True)
    results = Collector(stack.kafka, topics.GATEKEEPER_RESULTS, from_end=True)
    reader = AnswerReader(stack.kafka)
    try:
        with (
            llama_server(built, tmp_path / "llama.log") as server,
            running_pipeline(stack, tmp_path / "roles", _env(server.base_url)),
        ):
            publish(stack.kafka, list(asked))
            answers = reader.wait_for({e.run_id for e in asked}, timeout_s=ANSWER_S)
            time.sleep(2)
    finally:
        reader.close()
        for collector in (steps, verdicts, results):
            collector.close()
    assert set(answers) == {e.run_id for e in asked}, "every request answered"

    ours = {e.run_id for e in asked}
    outcomes, asked_roles, sizes = _outcomes(answers, _of(steps.events, AgentStep, ours))
    print("\nrole outcomes per run:", json.dumps(outcomes, indent=1, ensure_ascii=False))
    print("prompt tokens by the server:", sizes)
    # The executor always asks the model, and so does the planner of a question. At the
    # small profile, the alert's planner is not asked: the alert chose the skill. The
    # verifier and the composer are not asked when their deterministic part decides: a
    # round the checks reject gets no model verdict, and a REJECT gets the template answer.
    alert_run = asked[0].run_id
    for run_id in ours:
        by_role, final = outcomes[run_id], answers[run_id].verdict
        assert by_role["executor"] != "not asked", (run_id, by_role)
        planner_asked = by_role["planner"] != "not asked"
        assert planner_asked is (run_id != alert_run), (run_id, by_role)
        if by_role["composer"] == "not asked":
            assert final == "REJECT", (run_id, by_role, final)
        if by_role["verifier"] == "not asked":
            assert final != "PASS", (run_id, by_role, final)
        for role, outcome in by_role.items():
            if role in asked_roles[run_id]:
                assert outcome != "not asked", (run_id, role, outcome)

    assert sizes, "the server answered at least one call with its usage"
    assert max(tokens for _, tokens in sizes) <= PER_SLOT, "a prompt over the slot's window"

    rules, phrases = load_verifier_rules(), default_overclaim_phrases()
    gated = {r.run_id: r for r in _of(results.events, GatekeeperResult, ours)}
    for verdict in _of(verdicts.events, Verdict, ours):
        if verdict.verdict != "PASS" or verdict.run_id not in gated:
            continue
        checked = verify(input_from_event(gated[verdict.run_id]), rules, phrases)
        supported = {c.claim_text for c in checked.claim_checks if c.status == "SUPPORTED"}
        for claim in verdict.composer_input.allowed_claims:
            assert claim.claim_text in supported, (verdict.run_id, claim.claim_text)


def _outcomes(
    answers: dict[str, Answer], steps: list[AgentStep]
) -> tuple[dict[str, dict[str, str]], dict[str, set[str]], list[tuple[str, int]]]:
    """Per run, each model role's outcome; the roles each run asked; the prompt sizes."""
    asked_roles: dict[str, set[str]] = defaultdict(set)
    used: dict[str, set[str]] = defaultdict(set)
    sizes: list[tuple[str, int]] = []
    for step in steps:
        role = _role(step.agent_name)
        asked_roles[step.run_id].add(role)
        if step.success:
            used[step.run_id].add(role)
        if step.prompt_tokens is not None:
            sizes.append((step.agent_name, step.prompt_tokens))
    outcomes: dict[str, dict[str, str]] = {}
    for run_id, answer in answers.items():
        fallen = {f.role: f"fell back ({f.kind}: {f.reason})" for f in answer.fallbacks}
        outcomes[run_id] = {role: _outcome(role, fallen, used[run_id]) for role in MODEL_ROLES}
    return outcomes, asked_roles, sizes


def _role(agent_name: str) -> str:
    """The role a step's agent name belongs to (``chat_executor`` → ``executor``)."""
    return next((role for role in MODEL_ROLES if role in agent_name), agent_name)


def _outcome(role: str, fallen: dict[str, str], used: set[str]) -> str:
    if role in fallen:
        return fallen[role]
    return "used" if role in used else "not asked"


def _of(events: list[Event], kind: type[E], runs: set[str]) -> list[E]:
    return [e for e in events if isinstance(e, kind) and e.run_id in runs]
