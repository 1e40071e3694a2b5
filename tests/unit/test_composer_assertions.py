"""The answer guard: causes no claim states, absence asserted over a negative observation."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.composer import compose, guard, guard_material
from services.composer.guard_rules import load_guard_rules, parse_guard_rules
from tracebound.errors import ConfigError
from tracebound.events import AllowedClaim, ComposerInput

NEGATIVE = AllowedClaim(
    claim_id="claim-neg",
    claim_type="negative_observation",
    claim_text="The current query found no HikariCP pool exhaustion logs for inventory-service.",
    evidence_excerpts=("query=inventory-service HikariCP; total=0",),
    raw_paths=("$.no_evidence",),
)
CPU = AllowedClaim(
    claim_id="claim-1",
    claim_type="observation",
    claim_text="payment-service has a firing HighCPUUsage alert at 92% CPU.",
    evidence_excerpts=(
        "HighCPUUsage, service=payment-service, state=firing, current=92%, threshold=80%, "
        "duration=25m",
    ),
    raw_paths=("$.alerts[0]",),
)
HYPOTHESIS = "Possible cause from the runbook, not verified here: CPU saturation due to a busy loop"


def test_issue_answers_are_violations() -> None:
    zh = guard([NEGATIVE], "inventory-service 不存在 HikariCP 连接池耗尽问题。")
    en = guard([NEGATIVE], "We confirmed there is no connection pool problem on inventory-service.")
    cause = guard([CPU], "payment-service CPU at 92%, caused by the v2.3.1 deploy.")
    assert any("absence" in v for v in zh.violations), zh.violations
    assert any("absence" in v for v in en.violations), en.violations
    assert any("causal link 'caused by'" in v for v in cause.violations), cause.violations
    assert any("version v2.3.1" in v for v in cause.violations), cause.violations


@pytest.mark.parametrize(
    "answer",
    [
        "确认 inventory-service 没有连接池耗尽。",
        "inventory-service 未出现连接池耗尽。",
        "inventory-service has no HikariCP problem.",
        "inventory-service looks healthy.",
        "The HikariCP pool of inventory-service is working normally.",
        "inventory-service 运行正常。",
        "HikariCP exhaustion can be ruled out for inventory-service.",
        "inventory-service never exhausted its HikariCP pool.",
    ],
)
def test_absence_over_a_negative_observation_is_caught(answer: str) -> None:
    result = guard([NEGATIVE], answer)
    assert not result.ok
    assert any("absence" in v or "over-claim" in v for v in result.violations), result.violations


@pytest.mark.parametrize(
    "answer",
    [
        "The current query found no matching evidence for HikariCP pool exhaustion logs for "
        "inventory-service.",
        "当前查询未检索到 inventory-service 的 HikariCP 日志的匹配证据。",
        "No matching evidence was found for inventory-service; this does not mean the pool is "
        "fine.",
        NEGATIVE.claim_text,
    ],
)
def test_found_nothing_and_hedges_pass(answer: str) -> None:
    assert guard([NEGATIVE], answer).ok, guard([NEGATIVE], answer).violations


@pytest.mark.parametrize(
    "answer",
    [
        "payment-service CPU at 92% due to a busy loop.",
        "payment-service 的 CPU 为 92%，由于流量突增。",
        "流量突增导致 payment-service CPU 达到 92%。",
        "payment-service CPU is at 92% because of garbage collection.",
        "The HighCPUUsage alert led to throttling on payment-service.",
    ],
)
def test_causes_no_claim_states_are_caught(answer: str) -> None:
    result = guard([CPU], answer)
    assert any("causal link" in v for v in result.violations), result.violations


def test_a_cause_stated_by_a_hypothesis_passes() -> None:
    answer = f"payment-service has a firing HighCPUUsage alert at 92% CPU.\n- {HYPOTHESIS}"
    assert guard([CPU], answer, hypotheses=[HYPOTHESIS]).ok
    assert not guard([CPU], answer).ok
    restated = "A busy loop may be behind it: CPU saturation due to a busy loop (not verified)."
    assert guard([CPU], restated, hypotheses=[HYPOTHESIS]).ok


def test_absence_is_not_checked_without_a_negative_observation() -> None:
    assert guard([CPU], "payment-service has a firing HighCPUUsage alert at 92% CPU.").ok
    assert guard([CPU], "The alert does not say which pod.").ok


@pytest.mark.parametrize("language", ["en", "zh"])
@pytest.mark.parametrize("verdict", ["PASS", "LOW_CONFID", "REJECT"])
def test_template_answers_with_causes_and_gaps_pass(language: str, verdict: str) -> None:
    material = ComposerInput(
        original_query="why is payment-service hot, and inventory-service?",
        verdict=verdict,
        allowed_claims=(CPU, NEGATIVE),
        allowed_hypotheses=(HYPOTHESIS, "可能原因：由于连接泄漏导致连接池耗尽"),
        missing_info=("no heap dump is available for payment-service",),
        recommended_actions=("check payment-service thread dumps",),
        rationale="r",
    )
    composed = compose(material, language)
    for text in (composed.user_facing_answer, composed.answer_summary):
        result = guard_material(material, text)
        assert result.ok, (result.violations, text)


def test_guard_rules_file_is_validated(tmp_path: Path) -> None:
    assert load_guard_rules().causal.search("caused by")
    with pytest.raises(ConfigError, match="answer guard rules"):
        parse_guard_rules({"version": "x", "causal": {"en": [], "zh": ["导致"]}})
    bad = tmp_path / "guard.json"
    bad.write_text("{", encoding="utf-8")
    with pytest.raises(ConfigError, match="not JSON"):
        load_guard_rules(bad)
