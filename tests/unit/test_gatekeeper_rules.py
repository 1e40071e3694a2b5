"""Every gatekeeper rule and severity, back-fill, and the result's shape."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from services.gatekeeper import CheckOutcome
from tests.support import demo_evidence as demo
from tests.support.demo_evidence import scenarios
from tests.support.gate import assert_fails, first_binding, gate, scenario
from tests.support.gate import gate_json as run
from tracebound.events import GatekeeperOutcome


def shown(outcome: CheckOutcome) -> dict[str, Any]:
    """The result as the CLI prints it."""
    result: dict[str, Any] = outcome.result.model_dump(mode="json")
    return result


SEED_KEYS = {
    "status",
    "severity",
    "rule_set_version",
    "rules",
    "checked_bindings",
    "failed_rules",
    "warnings",
    "errors",
}


@pytest.mark.parametrize("name", [s.name for s in scenarios()])
def test_correct_scenarios_pass(name: str) -> None:
    s = scenario(name)
    result = run(s.structured_output, s.tool_invocations)
    assert set(result) == SEED_KEYS
    assert (result["status"], result["severity"]) == ("pass", "none")
    assert result["failed_rules"] == result["errors"] == result["warnings"] == []
    assert result["checked_bindings"]
    for rec in result["checked_bindings"]:
        assert rec["status"] == "pass"
        assert rec["matched_text"]


def test_check_is_deterministic_and_leaves_input_untouched() -> None:
    s = scenario("full-incident")
    first_binding(s)["source_invocation_id"] = None
    before = copy.deepcopy((s.structured_output, s.tool_invocations))
    one = gate(s.structured_output, s.tool_invocations)
    two = gate(s.structured_output, s.tool_invocations)
    assert one == two
    assert (s.structured_output, s.tool_invocations) == before


# -- contract rules ----------------------------------------------------------------------


@pytest.mark.parametrize("version", ["executor_evidence_v1", None, 2])
def test_answer_version_mismatch_is_low_confid(version: Any) -> None:
    s = scenario("narrow-highcpu")
    s.structured_output["answer_version"] = version
    result = run(s.structured_output, s.tool_invocations)
    assert_fails(result, "low_confid", "contract.answer_version")
    assert result["failed_rules"] == ["contract.answer_version"]


def test_missing_structured_output_is_low_confid() -> None:
    outcome = gate(None, demo.tool_invocations())
    assert_fails(shown(outcome), "low_confid", "contract.answer_version")
    assert outcome.structured_output is None


@pytest.mark.parametrize("field", ["diagnosis_summary", "user_facing_answer"])
def test_forbidden_top_level_fields_reject(field: str) -> None:
    s = scenario("narrow-highcpu")
    s.structured_output[field] = "payment-service is overloaded"
    assert_fails(
        run(s.structured_output, s.tool_invocations), "reject", "contract.forbidden_fields"
    )


def test_plural_invocation_ids_in_binding_reject() -> None:
    s = scenario("narrow-highcpu")
    first_binding(s)["source_invocation_ids"] = [demo.METRICS_ID]
    result = run(s.structured_output, s.tool_invocations)
    assert_fails(result, "reject", "contract.forbidden_fields")
    assert result["checked_bindings"][0]["rule"] == "contract.forbidden_fields"


@pytest.mark.parametrize(
    "breakage",
    [
        lambda so: so.update(claims={"claim-1": {}}),
        lambda so: so["claims"].append("payment-service is slow"),
        lambda so: so["claims"][0].pop("claim_text"),
        lambda so: so["claims"][0].update(evidence_bindings="$.alerts[0]"),
    ],
)
def test_malformed_claims_reject(breakage: Any) -> None:
    s = scenario("narrow-highcpu")
    breakage(s.structured_output)
    assert_fails(run(s.structured_output, s.tool_invocations), "reject", "contract.claims_shape")


def test_empty_bindings_reject() -> None:
    s = scenario("narrow-highcpu")
    s.structured_output["claims"][0]["evidence_bindings"] = []
    result = run(s.structured_output, s.tool_invocations)
    assert_fails(result, "reject", "claim.bindings_nonempty")
    assert result["errors"][0]["claim_id"] == "claim-1"


@pytest.mark.parametrize(
    ("field", "value"),
    [("source_invocation_id", "517"), ("source_invocation_id", True), ("evidence_excerpt", 92)],
)
def test_binding_field_types_reject(field: str, value: Any) -> None:
    s = scenario("narrow-highcpu")
    first_binding(s)[field] = value
    assert_fails(run(s.structured_output, s.tool_invocations), "reject", "binding.fields")


# -- invocation rules ---------------------------------------------------------------------


def test_fake_invocation_id_rejects() -> None:
    s = scenario("narrow-highcpu")
    first_binding(s)["source_invocation_id"] = 9999
    result = run(s.structured_output, s.tool_invocations)
    assert_fails(result, "reject", "invocation.exists")
    assert result["checked_bindings"][0]["status"] == "fail"
    assert result["checked_bindings"][0]["rule"] == "invocation.exists"


def test_invocation_of_another_tool_rejects() -> None:
    s = scenario("narrow-highcpu")
    first_binding(s)["source_invocation_id"] = demo.LOGS_ID
    assert_fails(run(s.structured_output, s.tool_invocations), "reject", "invocation.tool_name")


@pytest.mark.parametrize("drop", ["retrieval_details", "evidence_refs"])
def test_legacy_invocation_without_refs_is_low_confid(drop: str) -> None:
    s = scenario("narrow-highcpu")
    metrics = s.tool_invocations[0]
    if drop == "retrieval_details":
        del metrics["retrieval_details"]
    else:
        del metrics["retrieval_details"]["evidence_refs"]
    result = run(s.structured_output, s.tool_invocations)
    assert_fails(result, "low_confid", "invocation.legacy_refs")
    assert result["failed_rules"] == ["invocation.legacy_refs"]


def test_backfill_on_unique_match_warns_and_passes() -> None:
    s = scenario("order-service-pool")
    binding = first_binding(s, claim=1)
    del binding["source_invocation_id"]
    outcome = gate(s.structured_output, s.tool_invocations)
    result = shown(outcome)
    assert (result["status"], result["severity"]) == ("pass", "none")
    [warning] = result["warnings"]
    assert warning["rule"] == "invocation.backfill"
    assert (warning["source_invocation_id"], warning["raw_path"]) == (
        demo.METRICS_ID,
        "$.alerts[1]",
    )
    rec = result["checked_bindings"][2]
    assert (rec["status"], rec["source_invocation_id"]) == ("backfilled", demo.METRICS_ID)
    assert outcome.structured_output is not None
    filled = outcome.structured_output["claims"][1]["evidence_bindings"][0]
    assert filled["source_invocation_id"] == demo.METRICS_ID
    assert "source_invocation_id" not in binding  # the input is not modified


def test_backfill_of_missing_raw_path() -> None:
    s = scenario("narrow-hikari-negative")
    first_binding(s)["raw_path"] = None
    first_binding(s)["source_invocation_id"] = None
    outcome = gate(s.structured_output, s.tool_invocations)
    assert shown(outcome)["status"] == "pass"
    assert outcome.structured_output is not None
    filled = outcome.structured_output["claims"][0]["evidence_bindings"][0]
    assert (filled["source_invocation_id"], filled["raw_path"]) == (
        demo.NO_EVIDENCE_ID,
        "$.no_evidence",
    )


def test_backfill_with_two_matching_invocations_is_low_confid() -> None:
    s = scenario("narrow-highcpu")
    twin = copy.deepcopy(s.tool_invocations[0])
    twin["id"] = 600
    s.tool_invocations.append(twin)
    first_binding(s)["source_invocation_id"] = None
    outcome = gate(s.structured_output, s.tool_invocations)
    assert_fails(shown(outcome), "low_confid", "invocation.backfill")
    assert shown(outcome)["failed_rules"] == ["invocation.backfill"]
    assert "2 invocation refs" in shown(outcome)["errors"][0]["message"]
    assert shown(outcome)["warnings"] == []
    assert outcome.structured_output is not None
    assert first_binding(s) == outcome.structured_output["claims"][0]["evidence_bindings"][0]


def test_backfill_without_any_match_is_low_confid() -> None:
    s = scenario("narrow-highcpu")
    binding = first_binding(s)
    binding["source_invocation_id"] = None
    binding["evidence_excerpt"] = binding["evidence_excerpt"].replace("92%", "93%")
    assert_fails(run(s.structured_output, s.tool_invocations), "low_confid", "invocation.backfill")


# -- evidence rules -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "$.alerts[0].state",
        "$.alerts[*]",
        "$.logs[0]",
        "$.shapes[0]",
        "$.alerts[00]",
        "$['alerts'][0]",
    ],
)
def test_raw_path_not_an_own_array_item_rejects(path: str) -> None:
    s = scenario("narrow-highcpu")
    first_binding(s)["raw_path"] = path
    result = run(s.structured_output, s.tool_invocations)
    assert_fails(result, "reject", "evidence.raw_path_shape", "evidence.raw_path")


def test_out_of_range_raw_path_rejects() -> None:
    s = scenario("narrow-highcpu")
    first_binding(s)["raw_path"] = "$.alerts[7]"
    result = run(s.structured_output, s.tool_invocations)
    assert_fails(result, "reject", "evidence.raw_path")
    assert "evidence.raw_path_shape" not in result["failed_rules"]


def test_changed_digit_rejects_with_repair_hint() -> None:
    s = scenario("narrow-highcpu")
    first_binding(s)["evidence_excerpt"] = "HighCPUUsage, service=payment-service, current=93%"
    result = run(s.structured_output, s.tool_invocations)
    assert_fails(result, "reject", "evidence.excerpt_supported")
    hint = result["errors"][0]["hint"]
    assert "current=92%" in hint["closest_ref_text"]
    assert 0 < hint["token_similarity"] < 1


def test_same_array_item_twice_rejects() -> None:
    s = scenario("user-service-latency")
    again = dict(first_binding(s), evidence_excerpt="p99=4.2s, threshold=3s")
    s.structured_output["claims"][1]["evidence_bindings"].append(again)
    result = run(s.structured_output, s.tool_invocations)
    assert_fails(result, "reject", "evidence.unique_item")
    assert "claim-1 binding 0" in result["errors"][0]["message"]


def test_same_array_item_twice_in_one_claim_rejects() -> None:
    s = scenario("narrow-highcpu")
    again = dict(first_binding(s), evidence_excerpt="current=92%, threshold=80%")
    s.structured_output["claims"][0]["evidence_bindings"].append(again)
    assert_fails(run(s.structured_output, s.tool_invocations), "reject", "evidence.unique_item")


@pytest.mark.parametrize("name", ["narrow-highcpu", "narrow-hikari-negative"])
def test_an_identical_binding_repeated_in_one_claim_is_a_duplicate(name: str) -> None:
    s = scenario(name)
    again = dict(first_binding(s))
    again["evidence_excerpt"] = f"  {again['evidence_excerpt'].upper()} "
    s.structured_output["claims"][0]["evidence_bindings"].append(again)
    result = run(s.structured_output, s.tool_invocations)
    assert_fails(result, "reject", "claim.duplicate_binding")
    [error] = result["errors"]
    assert (error["rule"], error["binding_index"]) == ("claim.duplicate_binding", 1)
    assert error["message"] == "binding repeats binding 0 of this claim"
    assert [b["status"] for b in result["checked_bindings"]] == ["pass", "fail"]


def test_the_same_no_evidence_ref_in_two_claims_is_no_duplicate() -> None:
    s = scenario("narrow-hikari-negative")
    second = copy.deepcopy(s.structured_output["claims"][0])
    second["claim_id"] = "claim-2"
    s.structured_output["claims"].append(second)
    result = run(s.structured_output, s.tool_invocations)
    assert "claim.duplicate_binding" not in result["failed_rules"]


def test_no_evidence_may_back_several_negative_claims() -> None:
    s = scenario("narrow-hikari-negative")
    second = copy.deepcopy(s.structured_output["claims"][0])
    second["claim_id"] = "claim-2"
    s.structured_output["claims"].append(second)
    assert run(s.structured_output, s.tool_invocations)["status"] == "pass"


# -- negative evidence --------------------------------------------------------------------


def test_negative_claim_bound_to_positive_log_rejects() -> None:
    s = scenario("narrow-hikari-negative")
    s.structured_output["claims"][0]["evidence_bindings"] = [dict(demo.POOL_LOG)]
    assert_fails(
        run(s.structured_output, s.tool_invocations), "reject", "negative.no_evidence_only"
    )


def test_negative_claim_mixing_positive_binding_rejects() -> None:
    s = scenario("narrow-hikari-negative")
    s.structured_output["claims"][0]["evidence_bindings"].append(dict(demo.POOL_LOG))
    assert_fails(
        run(s.structured_output, s.tool_invocations), "reject", "negative.no_evidence_only"
    )


def test_no_evidence_of_an_invocation_with_hits_rejects() -> None:
    s = scenario("narrow-hikari-negative")
    first_binding(s)["source_invocation_id"] = demo.LOGS_ID
    result = run(s.structured_output, s.tool_invocations)
    assert_fails(result, "reject", "evidence.raw_path", "negative.no_evidence_only")


def test_positive_claim_citing_no_evidence_rejects() -> None:
    s = scenario("narrow-hikari-negative")
    s.structured_output["claims"][0]["claim_type"] = "observation"
    assert_fails(run(s.structured_output, s.tool_invocations), "reject", "negative.claim_type")


def test_outcome_type() -> None:
    s = scenario("narrow-highcpu")
    outcome = gate(s.structured_output, s.tool_invocations)
    assert isinstance(outcome, CheckOutcome)
    assert isinstance(outcome.result, GatekeeperOutcome)
    assert outcome.structured_output == s.structured_output
    assert outcome.structured_output is not s.structured_output
