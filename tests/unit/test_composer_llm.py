"""The llm composer against a local OpenAI-compatible server: model-written, guard-checked."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from services.composer.guard import safe_answer
from services.composer.handler import ComposerHandler
from services.composer.llm_composer import shown_material
from services.composer.templates import default_templates
from services.gatekeeper import default_ruleset
from services.gatekeeper.handler import GatekeeperHandler
from services.verifier.handler import VerifierHandler, VerifierSettings
from tests.support import demo_evidence as demo
from tests.support import fake_openai as fake
from tests.support.evidence_events import evidence_event
from tests.support.rulebook import BOOK
from tracebound.events import (
    AgentStep,
    Answer,
    ClaimCheck,
    GatekeeperResult,
    ModelFallback,
    Verdict,
)
from tracebound.llm import LLMSettings, OpenAIChatModel

CPU_ANSWER = "payment-service 当前存在 HighCPUUsage 告警，CPU 使用率为 92%。"
ENVELOPE = {"event_id", "occurred_at"}


@pytest.fixture
def server() -> Iterator[fake.FakeOpenAI]:
    with fake.FakeOpenAI() as srv:
        yield srv


def model(server: fake.FakeOpenAI, timeout_s: float = 5.0) -> OpenAIChatModel:
    return OpenAIChatModel(
        LLMSettings(base_url=server.base_url, max_retries=0, timeout_s=timeout_s)
    )


def verdict_for(name: str, mutate: Any = None) -> Verdict:
    """The rules verifier's verdict on a demo scenario (round 1 is final)."""
    so = next(s for s in demo.scenarios() if s.name == name).structured_output
    if mutate is not None:
        mutate(so)
    event = evidence_event(so, demo.tool_invocations())
    [gate] = GatekeeperHandler(default_ruleset())(event)
    assert isinstance(gate, GatekeeperResult)
    [verdict] = VerifierHandler(VerifierSettings(max_rounds=1))(gate)
    assert isinstance(verdict, Verdict)
    return verdict


def reply(
    answer: str,
    summary: str = "payment-service 的 HighCPUUsage 告警正在触发。",
    actions: list[dict[str, str]] | None = None,
) -> fake.Entry:
    body = {
        "answer_summary": summary,
        "recommended_actions": actions or [],
        "user_facing_answer": answer,
    }
    return fake.text(json.dumps(body, ensure_ascii=False), prompt_tokens=400, completion_tokens=90)


def run(
    verdict: Verdict, server: fake.FakeOpenAI | None = None, *entries: fake.Entry
) -> tuple[Answer, list[AgentStep]]:
    if server is not None:
        server.script(*entries)
    chat = model(server, timeout_s=0.5) if server is not None else None
    out = ComposerHandler(chat)(verdict)
    assert isinstance(out[0], Answer)
    assert all(isinstance(e, AgentStep) for e in out[1:])
    return out[0], [e for e in out[1:] if isinstance(e, AgentStep)]


def test_clean_model_answer_is_published_as_written(server: fake.FakeOpenAI) -> None:
    verdict = verdict_for("narrow-highcpu")
    action = {"action_text": "查看 payment-service 的热点线程", "reason": "补充 CPU 证据"}
    answer, [step] = run(verdict, server, reply(CPU_ANSWER, actions=[action]))
    assert answer.user_facing_answer == CPU_ANSWER
    assert answer.answer_summary == "payment-service 的 HighCPUUsage 告警正在触发。"
    assert [a.action_text for a in answer.recommended_actions] == [action["action_text"]]
    assert answer.guard.ok and not answer.guard.replaced and answer.guard.violations == ()
    assert (answer.verdict, answer.final_status) == ("PASS", "answered")
    assert {p.name for p in answer.prompt_audit.prompts} == {"chat_composer"}
    assert (step.token_count, step.agent_name, step.success) == (490, "chat_composer", True)
    [request] = server.requests
    system = request.messages[0]["content"]
    assert "current=92%" in system and "verdict" in system
    # The material is compact JSON without what the model needs not read.
    shown = system.split("<<<MATERIAL\n", 1)[1].split("\nMATERIAL>>>", 1)[0]
    material = json.loads(shown)
    assert material["verdict"] == "PASS" and material["allowed_claims"]
    assert [] not in material.values() and "evidence_backends" not in material
    # No claim id (the answer never cites one), no claim type for a plain observation.
    claims = material["allowed_claims"]
    assert all("claim_id" not in c and "claim_type" not in c for c in claims)
    assert all(c.claim_type == "observation" for c in verdict.composer_input.allowed_claims)
    assert '", "' not in shown and '": ' not in shown


def test_a_claim_type_other_than_observation_is_shown() -> None:
    claim = {"claim_id": "c", "claim_type": "negative_observation", "claim_text": "t"}
    assert shown_material({"allowed_claims": [claim]})["allowed_claims"] == [
        {"claim_type": "negative_observation", "claim_text": "t"}
    ]


@pytest.mark.parametrize(
    ("injected", "violation"),
    [
        ("已排除 inventory-service 的连接池问题。", "已排除"),
        ("payment-service is healthy.", "is healthy"),
        ("payment-service 的 CPU 使用率为 95%。", "95%"),
    ],
    ids=["zh-ruled-out", "en-healthy", "invented-number"],
)
def test_over_claiming_answer_is_replaced_by_the_safe_answer(
    server: fake.FakeOpenAI, injected: str, violation: str
) -> None:
    verdict = verdict_for("full-incident")
    assert verdict.verdict == "PASS"
    answer, [step] = run(verdict, server, reply(f"{CPU_ANSWER}\n{injected}"))
    assert answer.user_facing_answer == safe_answer(verdict.composer_input, "zh", rules=BOOK)
    assert injected not in answer.user_facing_answer
    assert answer.guard.replaced and not answer.guard.ok
    assert any(violation in v for v in answer.guard.violations), answer.guard.violations
    rules, _ = run(verdict)
    assert answer.answer_summary == rules.answer_summary
    assert answer.recommended_actions == rules.recommended_actions
    assert step.success


def test_violating_summary_and_actions_are_screened(server: fake.FakeOpenAI) -> None:
    verdict = verdict_for("order-service-pool")
    text = verdict.composer_input.allowed_claims[0].claim_text
    actions = [
        {"action_text": "collect a thread dump of order-service", "reason": "find the holders"},
        {"action_text": "restart order-service", "reason": "free the pool"},
        {"action_text": "check checkout-service logs", "reason": "upstream"},
        {"action_text": "inspect order-service heap", "reason": "confirmed healthy otherwise"},
    ]
    entry = reply(
        text, summary="The pool is exhausted; the database is ruled out.", actions=actions
    )
    answer, _ = run(verdict, server, entry)
    rules, _ = run(verdict)
    kept, _, shown = answer.user_facing_answer.partition("\n\n")
    assert kept == text, "a clean answer text is kept"
    # the allowed hypotheses the model left out follow it, as the template shows them
    hypotheses = verdict.composer_input.allowed_hypotheses
    assert hypotheses and all(h in shown for h in hypotheses)
    assert shown in rules.user_facing_answer
    assert answer.answer_summary == rules.answer_summary
    assert [a.action_text for a in answer.recommended_actions] == [actions[0]["action_text"]]
    violations = answer.guard.violations
    assert answer.guard.replaced and not answer.guard.ok
    assert any(v.startswith("answer_summary:") and "ruled out" in v for v in violations)
    for index in (1, 2, 3):
        assert any(v.startswith(f"recommended_actions[{index}]") for v in violations)
    assert not any(v.startswith("recommended_actions[0]") for v in violations)


def test_a_hypothesis_the_model_wrote_is_not_added_again(server: fake.FakeOpenAI) -> None:
    verdict = verdict_for("order-service-pool")
    [hypothesis] = verdict.composer_input.allowed_hypotheses
    text = f"{verdict.composer_input.allowed_claims[0].claim_text}\n- {hypothesis}"
    answer, _ = run(verdict, server, reply(text))
    assert answer.user_facing_answer == text


def test_restating_a_refuted_claim_is_replaced(server: fake.FakeOpenAI) -> None:
    base = verdict_for("order-service-pool")
    refuted = ClaimCheck(
        claim_id="claim-9",
        claim_type="observation",
        claim_text="order-service pod restarted 23 times.",
        status="REFUTED",
        reason="test",
    )
    verdict = base.model_copy(update={"claim_checks": (*base.claim_checks, refuted)})
    answer, _ = run(verdict, server, reply("order-service pod restarted 23 times."))
    assert answer.guard.replaced
    assert any("restates a rejected claim" in v for v in answer.guard.violations)
    assert answer.user_facing_answer == safe_answer(verdict.composer_input, "zh", rules=BOOK)


def test_reject_never_calls_the_model(server: fake.FakeOpenAI) -> None:
    def break_binding(so: dict[str, Any]) -> None:
        so["claims"][0]["evidence_bindings"][0]["source_invocation_id"] = 999

    verdict = verdict_for("narrow-highcpu", break_binding)
    assert verdict.verdict == "REJECT"
    answer, steps = run(verdict, server, reply(CPU_ANSWER))
    rules, _ = run(verdict)
    assert server.requests == [] and steps == []
    assert answer.model_dump(exclude=ENVELOPE) == rules.model_dump(exclude=ENVELOPE)
    assert answer.final_status == "degraded" and "92%" not in answer.user_facing_answer


@pytest.mark.parametrize(
    ("entry", "kind"),
    [
        pytest.param(fake.status(500), "server_error", id="5xx"),
        pytest.param(fake.garbage(), "empty_reply", id="garbage"),
        pytest.param(
            fake.delay(3.0, fake.text("{}")), "timeout", id="timeout", marks=pytest.mark.slow
        ),
        pytest.param(
            fake.text("Here is my answer: payment-service is fine."), "invalid_output", id="prose"
        ),
        pytest.param(
            fake.text(json.dumps({"answer_summary": "x", "user_facing_answer": "  "})),
            "invalid_output",
            id="empty-answer",
        ),
    ],
)
@pytest.mark.parametrize("name", ["narrow-highcpu", "narrow-hikari-negative"])
def test_model_down_gives_the_rules_answer_and_says_why(
    server: fake.FakeOpenAI, entry: fake.Entry, kind: str, name: str
) -> None:
    verdict = verdict_for(name)
    answer, [step] = run(verdict, server, entry)
    rules, _ = run(verdict)
    same = {*ENVELOPE, "fallbacks"}
    assert answer.model_dump(exclude=same) == rules.model_dump(exclude=same)
    [fallback] = answer.fallbacks
    assert (fallback.role, fallback.kind) == ("composer", kind) and fallback.reason
    assert fallback.describe().startswith("composer: rules fallback because: ")
    assert rules.fallbacks == ()
    assert step.agent_name == "chat_composer"


def test_the_answer_carries_the_fallbacks_of_the_roles_before_it(server: fake.FakeOpenAI) -> None:
    earlier = ModelFallback(role="verifier", kind="timeout", reason="timed out after 5s")
    verdict = verdict_for("narrow-highcpu").model_copy(update={"fallbacks": (earlier,)})
    answer, _ = run(verdict, server, reply(CPU_ANSWER))
    assert answer.fallbacks == (earlier,)
    answer, _ = run(verdict, server, fake.status(503))
    assert [(f.role, f.kind) for f in answer.fallbacks] == [
        ("verifier", "timeout"),
        ("composer", "server_error"),
    ]


def test_an_answer_built_on_demo_data_says_so_whoever_wrote_it(server: fake.FakeOpenAI) -> None:
    verdict = verdict_for("narrow-highcpu")
    assert not verdict.composer_input.evidence_backends  # recorded without backends: no note
    assert "演示证据" not in run(verdict)[0].user_facing_answer
    material = verdict.composer_input.model_copy(
        update={"evidence_backends": ("demo", "knowledge-base")}
    )
    on_demo = verdict.model_copy(update={"composer_input": material})
    note = default_templates().languages["zh"].demo_note
    rules_answer, _ = run(on_demo)
    assert rules_answer.user_facing_answer.endswith("\n\n" + note)
    model_answer, _ = run(on_demo, server, reply(CPU_ANSWER))
    assert model_answer.user_facing_answer == f"{CPU_ANSWER}\n\n{note}"
    live = material.model_copy(update={"evidence_backends": ("request", "none")})
    live_answer, _ = run(verdict.model_copy(update={"composer_input": live}))
    assert note not in live_answer.user_facing_answer
