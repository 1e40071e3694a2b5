"""The answer guard: over-claims, invented facts, unstated causes, absence, restated claims."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.composer import compose, enforce, guard, guard_material, safe_answer
from services.composer.guard_rules import load_guard_rules, parse_guard_rules
from services.verifier.rules_file import default_overclaim_phrases
from tests.support.rulebook import BOOK
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
HEAP = AllowedClaim(
    claim_id="claim-2",
    claim_type="observation",
    claim_text="order-service JVM heap usage is 3.8 GB of 4 GB.",
)
EN_NEGATIVE = "The current query found no matching evidence for HikariCP logs for inventory-service"
ZH_NEGATIVE = "当前查询未检索到 inventory-service 的 HikariCP 日志的匹配证据"
PHRASES = default_overclaim_phrases()
HYPOTHESIS = "Possible cause from the runbook, not verified here: CPU saturation due to a busy loop"


@pytest.mark.parametrize("phrase", PHRASES.phrases)
def test_every_overclaim_phrase_is_caught_when_evidence_is_negative(phrase: str) -> None:
    answer = f"{ZH_NEGATIVE}，{phrase}。" if not phrase.isascii() else f"{EN_NEGATIVE}; {phrase}."
    result = guard([NEGATIVE], answer, rules=BOOK)
    assert not result.ok
    assert any("over-claim" in v and phrase.casefold() in v.casefold() for v in result.violations)
    assert not guard([NEGATIVE], answer.upper() if phrase.isascii() else answer, rules=BOOK).ok


@pytest.mark.parametrize("phrase", ["ruled out", "is healthy", "问题不存在", "已排除"])
def test_overclaim_without_supporting_positive_claim_is_caught(phrase: str) -> None:
    assert not guard([CPU], f"payment-service {phrase}.", rules=BOOK).ok
    assert not guard([], f"payment-service {phrase}.", rules=BOOK).ok


def test_overclaim_repeating_a_verified_positive_claim_is_tolerated() -> None:
    healthy = AllowedClaim(
        claim_id="claim-9", claim_type="observation", claim_text="user-service is healthy again."
    )
    assert guard([healthy], "Verified: user-service is healthy again.", rules=BOOK).ok
    assert guard([healthy, NEGATIVE], "- user-service is healthy again.", rules=BOOK).ok
    assert not guard([healthy, NEGATIVE], "inventory-service is healthy.", rules=BOOK).ok


def test_clean_answers_pass() -> None:
    assert guard([NEGATIVE], f"{EN_NEGATIVE}.", rules=BOOK).ok
    assert guard([NEGATIVE], f"{ZH_NEGATIVE}。", rules=BOOK).ok
    assert guard(
        [CPU], "payment-service has a firing HighCPUUsage alert at 92 ％ CPU.", rules=BOOK
    ).ok
    assert guard([CPU], "The alert has lasted 25 minutes against an 80% threshold.", rules=BOOK).ok
    assert guard([HEAP], "order-service heap: 3.8GB of 4GB.", rules=BOOK).ok


@pytest.mark.parametrize(
    ("answer", "fragment"),
    [
        ("payment-service CPU is at 95%.", "number 95%"),
        ("payment-service CPU has been high for 30 minutes.", "number 30 minutes"),
        ("payment-service CPU is at 92%, 3 pods are affected.", "number 3"),
        ("order-service also has a firing HighCPUUsage alert.", "service order-service"),
        ("payment-service fires HighMemoryUsage.", "name HighMemoryUsage"),
        ("pod-payment-service-7d8f9c6b5-x2k4m is hot.", "pod pod-payment-service-7d8f9c6b5-x2k4m"),
        ("It throws RedisCommandTimeoutException.", "error RedisCommandTimeoutException"),
    ],
)
def test_invented_numbers_and_identifiers_are_caught(answer: str, fragment: str) -> None:
    result = guard([CPU], answer, rules=BOOK)
    assert not result.ok
    assert any(fragment in v for v in result.violations), result.violations


def test_restated_rejected_claim_is_caught() -> None:
    rejected = "payment-service has a firing HighCPUUsage alert at 92% on pod restarts."
    result = guard(
        [CPU],
        "Note: payment-service has a firing HighCPUUsage alert at 92% on pod restarts.",
        rejected_claims=[rejected],
        rules=BOOK,
    )
    assert any("rejected claim" in v for v in result.violations)
    assert guard([CPU], CPU.claim_text, rejected_claims=[rejected], rules=BOOK).ok


def test_enforce_replaces_a_violating_answer_with_the_safe_answer() -> None:
    material = ComposerInput(
        original_query="inventory-service HikariCP?",
        verdict="PASS",
        allowed_claims=(NEGATIVE,),
        rationale="r",
    )
    answer, result = enforce(
        material, "en", "inventory-service has no problem; it is ruled out.", rules=BOOK
    )
    assert result.replaced and not result.ok and result.violations
    assert answer == safe_answer(material, "en", rules=BOOK)
    assert guard(material.allowed_claims, answer, rules=BOOK).ok
    kept, fine = enforce(material, "en", f"{EN_NEGATIVE}.", rules=BOOK)
    assert kept == f"{EN_NEGATIVE}." and fine.ok and not fine.replaced


def test_restated_rejected_claim_with_decimal_is_caught() -> None:
    slow = AllowedClaim(
        claim_id="claim-3",
        claim_type="observation",
        claim_text="user-service p99 latency is 9.5 s against a 3 s threshold.",
    )
    rejected = "user-service p99 latency is 9.5 s against a 3 s threshold."
    result = guard([slow], f"First. {rejected} Last.", rejected_claims=[rejected], rules=BOOK)
    assert any("rejected claim" in v for v in result.violations)


def test_issue_answers_are_violations() -> None:
    zh = guard([NEGATIVE], "inventory-service 不存在 HikariCP 连接池耗尽问题。", rules=BOOK)
    en = guard(
        [NEGATIVE],
        "We confirmed there is no connection pool problem on inventory-service.",
        rules=BOOK,
    )
    cause = guard([CPU], "payment-service CPU at 92%, caused by the v2.3.1 deploy.", rules=BOOK)
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
    result = guard([NEGATIVE], answer, rules=BOOK)
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
    assert guard([NEGATIVE], answer, rules=BOOK).ok, guard(
        [NEGATIVE], answer, rules=BOOK
    ).violations


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
    result = guard([CPU], answer, rules=BOOK)
    assert any("causal link" in v for v in result.violations), result.violations


def test_a_cause_stated_by_a_hypothesis_passes() -> None:
    answer = f"payment-service has a firing HighCPUUsage alert at 92% CPU.\n- {HYPOTHESIS}"
    assert guard([CPU], answer, hypotheses=[HYPOTHESIS], rules=BOOK).ok
    assert not guard([CPU], answer, rules=BOOK).ok
    restated = "A busy loop may be behind it: CPU saturation due to a busy loop (not verified)."
    assert guard([CPU], restated, hypotheses=[HYPOTHESIS], rules=BOOK).ok


def test_absence_is_not_checked_without_a_negative_observation() -> None:
    assert guard(
        [CPU], "payment-service has a firing HighCPUUsage alert at 92% CPU.", rules=BOOK
    ).ok
    assert guard([CPU], "The alert does not say which pod.", rules=BOOK).ok


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
    composed = compose(material, language, book=BOOK)
    for text in (composed.user_facing_answer, composed.answer_summary):
        result = guard_material(material, text, rules=BOOK)
        assert result.ok, (result.violations, text)


def test_guard_rules_file_is_validated(tmp_path: Path) -> None:
    assert load_guard_rules().causal.search("caused by")
    with pytest.raises(ConfigError, match="answer guard rules"):
        parse_guard_rules({"version": "x", "causal": {"en": [], "zh": ["导致"]}})
    bad = tmp_path / "guard.json"
    bad.write_text("{", encoding="utf-8")
    with pytest.raises(ConfigError, match="not JSON"):
        load_guard_rules(bad)


def test_an_action_quoted_word_for_word_keeps_its_reason() -> None:
    action = "Runbook check, not yet run: capture a heap dump, because a restart destroys it"
    answer = f"{CPU.claim_text}\n- {action}"
    assert guard([CPU, NEGATIVE], answer, notes=[action], rules=BOOK).ok
    reworded = f"{CPU.claim_text}\n- Capture a heap dump because the pod restarted."
    assert any(
        "causal link" in v for v in guard([CPU], reworded, notes=[action], rules=BOOK).violations
    )


@pytest.mark.parametrize(
    ("answer", "fragment"),
    [
        ("payment-service CPU is at 80%.", "80% [current]"),
        ("payment-service CPU 使用率为 80%。", "80% [current]"),
        ("The payment-service CPU threshold is 92%.", "92% [threshold]"),
    ],
)
def test_a_number_bound_to_another_attribute_is_caught(answer: str, fragment: str) -> None:
    result = guard([CPU], answer, rules=BOOK)
    assert any(fragment in v for v in result.violations), result.violations
    assert guard([CPU], "payment-service CPU usage is 92%, threshold 80%.", rules=BOOK).ok


def test_a_restated_causal_clause_licenses_only_its_own_links() -> None:
    runbook = AllowedClaim(
        claim_id="claim-3",
        claim_type="observation",
        claim_text=(
            "Runbook ServiceUnavailable (Likely causes) says: Pods are repeatedly killed: "
            "OOMKilled (exit code 137) or failing liveness probes."
        ),
    )
    stem = runbook.claim_text.rstrip(".")
    assert guard([runbook], runbook.claim_text, rules=BOOK).ok
    for addition in (", which led to the checkout errors.", "，因为节点 GC 压力过大。"):
        result = guard([runbook], stem + addition, rules=BOOK)
        assert not result.ok
        assert any("causal link" in v for v in result.violations), result.violations
