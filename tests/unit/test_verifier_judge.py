"""The rules verifier: the seed's verified samples, verdict rules and the composer's material."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from services.composer import compose, guard
from services.gatekeeper import default_ruleset
from services.gatekeeper.handler import GatekeeperHandler
from services.verifier import evaluate_aiops, verify
from services.verifier.input import input_from_event
from tests.support import demo_evidence as demo
from tests.support.evidence_events import evidence_event
from tests.support.gate import verifier_input as make_input
from tests.support.rulebook import BOOK, PHRASES, RULES
from tracebound.events import Alert, GatekeeperResult

CPU_TEXT = "payment-service has a firing HighCPUUsage alert at 92% CPU."
ZH_NEGATIVE = "当前查询未检索到 inventory-service 的 HikariCP 连接池耗尽日志。"


def scenario(name: str) -> demo.Scenario:
    return next(s for s in demo.scenarios() if s.name == name)


def one_claim(ctype: str, text: str, *bindings: dict[str, Any], **lists: Any) -> dict[str, Any]:
    return demo.output(demo.claim("claim-1", ctype, text, *bindings), **lists)


def test_seed_sample_highcpu_narrow_confirmation() -> None:
    outcome = verify(
        make_input(scenario("narrow-highcpu").structured_output), rules=RULES, phrases=PHRASES
    )
    assert outcome.verdict == "PASS"
    assert outcome.groundedness_score == 1.0
    [claim] = outcome.claim_checks
    assert (claim.claim_type, claim.status, claim.raw_paths) == (
        "observation",
        "SUPPORTED",
        ("$.alerts[0]",),
    )
    assert {(f.kind, f.fact) for f in outcome.facts_checked} == {
        ("number", "92% [current]"),
        ("name", "payment-service"),
        ("name", "HighCPUUsage"),
    }
    assert outcome.critical_fact_count == 3
    [allowed] = outcome.composer_input.allowed_claims
    assert allowed.claim_text == CPU_TEXT
    assert allowed.raw_paths == ("$.alerts[0]",)
    assert "current=92%" in allowed.evidence_excerpts[0]
    answer = compose(outcome.composer_input, "en", book=BOOK).user_facing_answer
    assert "payment-service" in answer and "92%" in answer
    for out_of_scope in ("order-service", "user-service", "HikariPool", "91%", "root cause"):
        assert out_of_scope not in answer
    assert guard(outcome.composer_input.allowed_claims, answer, rules=BOOK).ok


@pytest.mark.parametrize("language", ["en", "zh"])
def test_seed_sample_hikari_negative_observation(language: str) -> None:
    outcome = verify(
        make_input(scenario("narrow-hikari-negative").structured_output),
        rules=RULES,
        phrases=PHRASES,
    )
    assert outcome.verdict == "PASS"
    [claim] = outcome.claim_checks
    assert (claim.claim_type, claim.status, claim.raw_paths) == (
        "negative_observation",
        "SUPPORTED",
        ("$.no_evidence",),
    )
    composed = compose(outcome.composer_input, language, book=BOOK)
    expected = "found no matching evidence for" if language == "en" else "当前查询未检索到"
    assert expected in composed.user_facing_answer
    assert "inventory-service" in composed.user_facing_answer
    result = guard(outcome.composer_input.allowed_claims, composed.user_facing_answer, rules=BOOK)
    assert result.ok, result.violations


def test_chinese_seed_claims_pass() -> None:
    so = demo.output(
        demo.claim(
            "claim-1",
            "observation",
            "payment-service 当前存在 HighCPUUsage 告警，CPU 使用率为 92％。",
            demo.CPU_ALERT,
        ),
        demo.claim("claim-2", "negative_observation", ZH_NEGATIVE, demo.NO_INVENTORY_LOGS),
    )
    outcome = verify(make_input(so), rules=RULES, phrases=PHRASES)
    assert outcome.verdict == "PASS", outcome.rationale


def test_gatekeeper_reject_is_reject_and_allows_nothing() -> None:
    so = scenario("narrow-highcpu").structured_output
    so["claims"][0]["evidence_bindings"][0]["source_invocation_id"] = 999
    outcome = verify(make_input(so), rules=RULES, phrases=PHRASES)
    assert outcome.verdict == "REJECT"
    assert "invocation.exists" in outcome.rationale
    assert outcome.composer_input.allowed_claims == ()
    assert outcome.claim_checks[0].status == "NOT_ENOUGH_INFO"


def test_gatekeeper_low_confid_never_passes_even_with_fine_claims() -> None:
    so = scenario("narrow-highcpu").structured_output
    inp = make_input(so)
    gate = inp.gatekeeper_result.model_dump()
    gate.update(status="fail", severity="low_confid", failed_rules=["invocation.legacy_refs"])
    outcome = verify(
        inp.model_copy(
            update={"gatekeeper_result": type(inp.gatekeeper_result).model_validate(gate)}
        ),
        rules=RULES,
        phrases=PHRASES,
    )
    assert outcome.verdict == "LOW_CONFID"
    assert outcome.claim_checks[0].status == "SUPPORTED"
    assert outcome.retry_reasons and "gatekeeper lowered confidence" in outcome.retry_reasons[0]


def test_unverified_binding_counts_for_nothing() -> None:
    so = one_claim(
        "observation", CPU_TEXT, {**demo.CPU_ALERT, "raw_path": None, "source_invocation_id": None}
    )
    invocations = demo.tool_invocations()
    invocations.append(copy.deepcopy(invocations[0]) | {"id": 600})  # back-fill now ambiguous
    outcome = verify(make_input(so, invocations), rules=RULES, phrases=PHRASES)
    assert outcome.verdict == "LOW_CONFID"
    assert outcome.claim_checks[0].status == "NOT_ENOUGH_INFO"
    assert outcome.failed_claims == ("claim-1",)


def test_backfilled_binding_is_verified_evidence() -> None:
    so = one_claim("observation", CPU_TEXT, {**demo.CPU_ALERT, "source_invocation_id": None})
    inp = make_input(so)
    assert inp.gatekeeper_result.checked_bindings[0].status == "backfilled"
    assert verify(inp, rules=RULES, phrases=PHRASES).verdict == "PASS"


@pytest.mark.parametrize("status", ["invalid", "missing"])
def test_unusable_executor_output_is_low_confid_and_final_answer_ignored(status: str) -> None:
    inp = make_input(
        None,
        executor_final_answer=CPU_TEXT,
        executor_output_parse_status={"status": status, "detail": "x"},
    )
    outcome = verify(inp, rules=RULES, phrases=PHRASES)
    assert outcome.verdict == "LOW_CONFID"
    assert outcome.claim_checks == () and outcome.composer_input.allowed_claims == ()


def test_valid_output_never_reads_final_answer() -> None:
    so = scenario("narrow-highcpu").structured_output
    plain = verify(make_input(so), rules=RULES, phrases=PHRASES)
    noisy = verify(
        make_input(so, executor_final_answer="order-service is down at 29%"),
        rules=RULES,
        phrases=PHRASES,
    )
    assert plain.to_json() == noisy.to_json()


def test_zero_claims_is_low_confid() -> None:
    outcome = verify(make_input(demo.output()), rules=RULES, phrases=PHRASES)
    assert outcome.verdict == "LOW_CONFID"
    assert outcome.groundedness_score == 0.0


@pytest.mark.parametrize(
    "text",
    [
        "inventory-service has no HikariCP pool exhaustion problem.",
        "The current query found no HikariCP logs for inventory-service, so it is ruled out.",
        "inventory-service 的 HikariCP 连接池问题不存在。",
    ],
)
def test_negative_observation_must_not_claim_absence(text: str) -> None:
    outcome = verify(
        make_input(one_claim("negative_observation", text, demo.NO_INVENTORY_LOGS)),
        rules=RULES,
        phrases=PHRASES,
    )
    assert outcome.claim_checks[0].status == "REFUTED"
    assert outcome.verdict == "REJECT"


def test_refuted_and_unproven_claims_decide_the_verdict() -> None:
    unproven = demo.claim(
        "claim-2",
        "observation",
        "payment-service Redis calls fail with RedisCommandTimeoutException.",
        demo.REDIS_RETRY_LOG,
    )
    refuted = demo.claim(
        "claim-3",
        "observation",
        "Capture hot threads with jstack, and do not check recent deploys.",
        demo.CPU_RUNBOOK,
    )
    base = scenario("narrow-highcpu").structured_output
    low = verify(
        make_input({**base, "claims": [*base["claims"], unproven]}), rules=RULES, phrases=PHRASES
    )
    assert low.verdict == "LOW_CONFID"
    assert [c.status for c in low.claim_checks] == ["SUPPORTED", "NOT_ENOUGH_INFO"]
    assert low.groundedness_score == 0.5
    assert [a.claim_id for a in low.composer_input.allowed_claims] == ["claim-1"]
    rejected = verify(
        make_input({**base, "claims": [*base["claims"], refuted]}), rules=RULES, phrases=PHRASES
    )
    assert rejected.verdict == "REJECT"
    assert rejected.rejected_claims == (
        "Capture hot threads with jstack, and do not check recent deploys.",
    )


def test_composer_material_filters_hypotheses_and_actions() -> None:
    so = scenario("narrow-highcpu").structured_output
    so["hypotheses"] = ["a hot loop in payment-service"]
    so["recommended_actions"] = [
        "capture hot threads with jstack",
        "restart payment-service",
        {"action_text": "check recent deployments"},
    ]
    so["missing_info"] = ["request rate"]
    material = verify(make_input(so), rules=RULES, phrases=PHRASES).composer_input
    assert material.allowed_hypotheses == ("a hot loop in payment-service",)
    assert material.recommended_actions == (
        "capture hot threads with jstack",
        "check recent deployments",
    )
    assert material.missing_info == ("request rate",)


def test_aiops_evaluation_in_aiops_mode() -> None:
    alerts = [
        {
            "labels": {"alertname": "HighCPUUsage", "service": "payment-service"},
            "annotations": {},
            "status": "firing",
        }
    ]
    trace = [
        {
            "tool_name": "query_metrics",
            "source_invocation_id": 517,
            "success": True,
            "evidence_status": "supported",
        }
    ]
    so = scenario("narrow-highcpu").structured_output
    outcome = verify(
        make_input(so, mode="AIOPS", alerts=alerts, tool_trace_summary=trace),
        rules=RULES,
        phrases=PHRASES,
    )
    assert outcome.aiops_rule_evaluation is not None
    assert outcome.aiops_rule_evaluation["passed"] is True
    assert outcome.aiops_rule_evaluation["version"] == "aiops-rules-v2"
    assert verify(make_input(so), rules=RULES, phrases=PHRASES).aiops_rule_evaluation is None


def test_aiops_flags_unrelated_alert_promotion_and_missing_tools() -> None:
    alerts = [
        Alert(status="firing", labels={"alertname": "SlowResponse", "service": "user-service"})
    ]
    so = scenario("narrow-highcpu").structured_output
    result = evaluate_aiops(alerts, so, [], answer_exists=True, rules=RULES)
    checks = {c["id"]: c["passed"] for c in result["checks"]}
    assert checks == {
        "report.exists": True,
        "focus.input_alerts": False,
        "evidence.tools_used": False,
        "focus.no_unrelated_alerts": False,
    }
    assert result["passed"] is False
    assert evaluate_aiops([], None, [], answer_exists=False, rules=RULES)["passed"] is False


def test_outcome_json_has_seed_fields() -> None:
    data = verify(
        make_input(scenario("full-incident").structured_output), rules=RULES, phrases=PHRASES
    ).to_json()
    for key in (
        "verdict",
        "groundedness_score",
        "critical_fact_count",
        "claim_checks",
        "facts_checked",
        "rationale",
        "composer_input",
    ):
        assert key in data
    assert data["verdict"] == "PASS"
    assert {c["status"] for c in data["claim_checks"]} == {"SUPPORTED"}


def test_input_from_gatekeeper_event() -> None:
    s = scenario("narrow-highcpu")
    evidence = evidence_event(s.structured_output, s.tool_invocations)
    [event] = GatekeeperHandler(default_ruleset())(evidence)
    assert isinstance(event, GatekeeperResult)
    inp = input_from_event(event)
    assert inp.original_query == evidence.request.query
    assert (inp.mode, inp.round, inp.retry_context) == ("CHAT", 1, None)
    outcome = verify(inp, rules=RULES, phrases=PHRASES)
    assert outcome.verdict == "PASS"
    assert outcome.composer_input.original_query == evidence.request.query


def test_each_fact_says_what_it_was_checked_against() -> None:
    base = scenario("narrow-highcpu").structured_output
    [claim] = base["claims"]
    wrong = {**claim, "claim_text": CPU_TEXT.replace("92%", "29%")}
    checked = verify(make_input(base), rules=RULES, phrases=PHRASES)
    number = next(f for f in checked.facts_checked if f.kind == "number")
    assert (number.found, number.conflict) == (True, False)
    assert "current=92%" in number.detail
    refuted = verify(make_input({**base, "claims": [wrong]}), rules=RULES, phrases=PHRASES)
    number = next(f for f in refuted.facts_checked if f.kind == "number")
    assert (number.fact, number.found, number.conflict) == ("29%", False, True)
    assert "92%" in number.detail  # what the cited item says instead
    assert refuted.to_json()["facts_checked"][0].keys() >= {"conflict", "detail"}
