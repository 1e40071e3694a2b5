"""The rules composer: PASS / LOW_CONFID / REJECT answers, and that they always pass the guard."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from services.composer import compose, guard, guard_material, negative_subject
from services.composer.templates import TEMPLATES_PATH, default_templates, load_templates
from services.verifier import VerifierInput, verify
from services.verifier.rules_file import default_overclaim_phrases, default_verifier_rules
from tests.support import demo_evidence as demo
from tests.support.gate import gate
from tests.support.rulebook import BOOK, PHRASES, RULES
from tracebound.errors import ConfigError
from tracebound.events import AllowedClaim, ComposerInput

LANGUAGES = ("en", "zh")


def verified(so: dict[str, Any] | None, **extra: Any) -> Any:
    checked = gate(so, demo.tool_invocations())
    data: dict[str, Any] = {
        "original_query": "demo",
        "executor_structured_output": checked.structured_output,
        "executor_output_parse_status": {"status": "valid" if so is not None else "missing"},
        "gatekeeper_result": checked.result,
    }
    data.update(extra)
    return verify(VerifierInput.model_validate(data), rules=RULES, phrases=PHRASES)


def variants() -> list[tuple[str, dict[str, Any] | None]]:
    """Every demo scenario as is, with an unproven claim, a refuted claim and a bad citation."""
    out: list[tuple[str, dict[str, Any] | None]] = [("no-output", None)]
    for s in demo.scenarios():
        so = s.structured_output
        so["hypotheses"] = [*so["hypotheses"], "user-service slowness is related", "it is 99% sure"]
        so["recommended_actions"] = [
            *so["recommended_actions"],
            "restart order-service",
            "check the 5 slowest queries",
        ]
        out.append((s.name, so))
        unproven = demo.claim(
            "claim-x",
            "observation",
            "payment-service throws RedisCommandTimeoutException.",
            demo.REDIS_RETRY_LOG,
        )
        out.append((f"{s.name}+unproven", {**so, "claims": [*so["claims"], unproven]}))
        refuted = demo.claim("claim-y", "observation", "user-service p99 is 9 s.", demo.SLOW_ALERT)
        out.append((f"{s.name}+refuted", {**so, "claims": [*so["claims"], refuted]}))
        fake = demo.claim(
            "claim-z",
            "observation",
            "user-service p99 is 4.2 s.",
            {**demo.SLOW_ALERT, "source_invocation_id": 999},
        )
        out.append((f"{s.name}+fake-id", {**so, "claims": [*so["claims"], fake]}))
    return out


VARIANTS = variants()


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize(("name", "so"), VARIANTS, ids=[n for n, _ in VARIANTS])
def test_composed_answers_always_pass_the_guard(
    name: str, so: dict[str, Any] | None, language: str
) -> None:
    outcome = verified(so)
    composed = compose(outcome.composer_input, language, book=BOOK)
    for text in (
        composed.user_facing_answer,
        composed.answer_summary,
        *(a.action_text for a in composed.recommended_actions),
    ):
        result = guard_material(
            outcome.composer_input, text, rejected_claims=outcome.rejected_claims, rules=BOOK
        )
        assert result.ok, (name, outcome.verdict, result.violations, text)
    assert compose(outcome.composer_input, language, book=BOOK) == composed  # deterministic


def test_pass_states_claims_hypotheses_and_evidence_actions() -> None:
    so = next(s for s in demo.scenarios() if s.name == "order-service-pool").structured_output
    so["recommended_actions"].append("restart order-service")
    composed = compose(verified(so).composer_input, "en", book=BOOK)
    text = composed.user_facing_answer
    assert "order-service HikariPool-1 is exhausted: 50/50 active, 23 waiting." in text
    assert "Unconfirmed hypotheses" in text
    assert "- a connection leak in order-service holds HikariCP connections" in text
    assert [a.action_text for a in composed.recommended_actions] == [
        "collect a thread dump of order-service"
    ]
    assert "restart" not in text
    assert composed.answer_summary.startswith("order-service HikariPool-1 is exhausted")


@pytest.mark.parametrize("language", LANGUAGES)
def test_low_confid_says_what_is_supported_and_what_is_missing(language: str) -> None:
    so = next(s for s in demo.scenarios() if s.name == "narrow-highcpu").structured_output
    so["claims"].append(
        demo.claim(
            "claim-2",
            "observation",
            "payment-service throws RedisCommandTimeoutException.",
            demo.REDIS_RETRY_LOG,
        )
    )
    so["missing_info"] = ["request rate of payment-service"]
    outcome = verified(so)
    assert outcome.verdict == "LOW_CONFID"
    composed = compose(outcome.composer_input, language, book=BOOK)
    text = composed.user_facing_answer
    p = default_templates().languages[language]  # type: ignore[index]
    assert p.low_intro in text and p.low_missing_header in text
    assert "payment-service has a firing HighCPUUsage alert at 92% CPU." in text
    assert "- request rate of payment-service" in text
    assert "RedisCommandTimeoutException" not in text
    assert composed.answer_summary == p.low_summary


@pytest.mark.parametrize("language", LANGUAGES)
def test_reject_asserts_nothing(language: str) -> None:
    so = next(s for s in demo.scenarios() if s.name == "full-incident").structured_output
    so["claims"][0]["claim_text"] = "payment-service CPU alert fires at 29%."
    outcome = verified(so)
    assert outcome.verdict == "REJECT"
    composed = compose(outcome.composer_input, language, book=BOOK)
    p = default_templates().languages[language]  # type: ignore[index]
    assert composed.user_facing_answer.startswith(p.reject_intro)
    assert composed.answer_summary == p.reject_summary
    assert not re.search(r"\d", composed.user_facing_answer)
    assert "-service" not in composed.user_facing_answer


def test_reject_ignores_claims_even_if_material_carries_them() -> None:
    claim = AllowedClaim(claim_id="c", claim_type="observation", claim_text="user-service is slow")
    material = ComposerInput(
        original_query="q",
        verdict="REJECT",
        allowed_claims=(claim,),
        allowed_hypotheses=("user-service leaks",),
        rationale="r",
    )
    assert "user-service" not in compose(material, "en", book=BOOK).user_facing_answer


@pytest.mark.parametrize(
    ("text", "subject"),
    [
        (demo.NEGATIVE_TEXT, "HikariCP pool exhaustion logs for inventory-service"),
        (
            "当前查询未检索到 inventory-service 的 HikariCP 连接池耗尽日志。",
            "inventory-service 的 HikariCP 连接池耗尽日志",
        ),
        ("No OOMKilled events for user-service were found.", "OOMKilled events for user-service"),
        (
            "query_logs returned no evidence for inventory-service HikariCP.",
            "inventory-service HikariCP",
        ),
    ],
)
def test_negative_subject_comes_from_the_claim(text: str, subject: str) -> None:
    assert negative_subject(text, default_verifier_rules()) == subject


def test_templates_carry_no_overclaim_and_no_fact() -> None:
    phrases = default_overclaim_phrases()
    for language, p in default_templates().languages.items():
        for name, value in p.model_dump().items():
            assert not phrases.pattern.search(value), (language, name)
            assert not guard(
                [], value.replace("{subject}", "").replace("{first}", ""), rules=BOOK
            ).violations


def test_bad_templates_raise_config_error(tmp_path: Path) -> None:
    data = json.loads(TEMPLATES_PATH.read_text(encoding="utf-8"))
    data["languages"]["en"]["reject_summary"] = "Rejected 2 claims."
    path = tmp_path / "composer-templates.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ConfigError, match="digit") as info:
        load_templates(path)
    assert str(path) in str(info.value)
    del data["languages"]["zh"]
    data["languages"]["en"]["reject_summary"] = "x"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ConfigError, match="zh"):
        load_templates(path)


def test_a_hypothesis_the_screen_drops_is_said_to_be_withheld() -> None:
    so = next(s for s in demo.scenarios() if s.name == "order-service-pool").structured_output
    so["hypotheses"].append("the pool was resized to 80 connections at 22:10")
    text = compose(verified(so).composer_input, "en", book=BOOK).user_facing_answer
    assert "80 connections" not in text
    assert "- a connection leak in order-service holds HikariCP connections" in text
    assert "Some hypotheses were withheld" in text
