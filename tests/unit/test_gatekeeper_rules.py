"""Every gatekeeper rule and severity, back-fill, disabled rules and bad rule files."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from services.gatekeeper import check, default_ruleset, load_ruleset, parse_ruleset
from services.gatekeeper.check import GatekeeperOutcome
from services.gatekeeper.ruleset import DEFAULT_RULES_PATH, RULE_PARAMETERS, Ruleset
from tests.support import demo_evidence as demo
from tests.support.demo_evidence import Scenario, scenarios
from tracebound.errors import ConfigError

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


def scenario(name: str) -> Scenario:
    return next(s for s in scenarios() if s.name == name)


def run(so: Any, invocations: list[dict[str, Any]], rs: Ruleset | None = None) -> dict[str, Any]:
    return check(so, invocations, rs or default_ruleset()).result


def first_binding(s: Scenario, claim: int = 0, binding: int = 0) -> dict[str, Any]:
    bindings: list[dict[str, Any]] = s.structured_output["claims"][claim]["evidence_bindings"]
    return bindings[binding]


def rules_document() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DEFAULT_RULES_PATH.read_text(encoding="utf-8"))
    return data


def ruleset_with(disabled: tuple[str, ...] = ()) -> Ruleset:
    doc = rules_document()
    for rule in doc["rules"]:
        if rule["id"] in disabled:
            rule["enabled"] = False
    return parse_ruleset(doc, "test-rules.json")


def assert_fails(result: dict[str, Any], severity: str, *rules: str) -> None:
    assert result["status"] == "fail"
    assert result["severity"] == severity
    for rule in rules:
        assert rule in result["failed_rules"], result["errors"]


# -- rule file and result shape --------------------------------------------------------


def test_default_rules_file_declares_every_rule() -> None:
    rs = default_ruleset()
    assert rs.version == "gatekeeper-rules-v1"
    assert set(rs.order) == set(RULE_PARAMETERS)
    meta = rs.metadata()
    assert {m["id"] for m in meta} == rs.enabled_ids
    assert all(set(m) == {"id", "description", "enabled", "default_severity"} for m in meta)


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
    one = check(s.structured_output, s.tool_invocations, default_ruleset())
    two = check(s.structured_output, s.tool_invocations, default_ruleset())
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
    outcome = check(None, demo.tool_invocations(), default_ruleset())
    assert_fails(outcome.result, "low_confid", "contract.answer_version")
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
    outcome = check(s.structured_output, s.tool_invocations, default_ruleset())
    result = outcome.result
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
    outcome = check(s.structured_output, s.tool_invocations, default_ruleset())
    assert outcome.result["status"] == "pass"
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
    outcome = check(s.structured_output, s.tool_invocations, default_ruleset())
    assert_fails(outcome.result, "low_confid", "invocation.backfill")
    assert outcome.result["failed_rules"] == ["invocation.backfill"]
    assert "2 invocation refs" in outcome.result["errors"][0]["message"]
    assert outcome.result["warnings"] == []
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
    "path", ["$.alerts[0].state", "$.alerts[*]", "$.logs[0]", "$.alerts[00]", "$['alerts'][0]"]
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
    s.structured_output["claims"][0]["evidence_bindings"].append(dict(first_binding(s)))
    assert_fails(run(s.structured_output, s.tool_invocations), "reject", "evidence.unique_item")


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


# -- severities and disabled rules --------------------------------------------------------


def test_reject_outranks_low_confid_and_failed_rules_follow_file_order() -> None:
    s = scenario("narrow-highcpu")
    s.structured_output["answer_version"] = "v1"
    extra = dict(first_binding(s), source_invocation_id=9999)
    s.structured_output["claims"][0]["evidence_bindings"].append(extra)
    s.structured_output["claims"][0]["evidence_bindings"].append(dict(extra))
    result = run(s.structured_output, s.tool_invocations)
    assert_fails(result, "reject")
    assert result["failed_rules"] == ["contract.answer_version", "invocation.exists"]


@pytest.mark.parametrize(
    ("rule", "breakage"),
    [
        ("evidence.excerpt_supported", lambda b, so: b.update(evidence_excerpt="current=93%")),
        ("contract.answer_version", lambda b, so: so.update(answer_version="v1")),
        ("invocation.exists", lambda b, so: b.update(source_invocation_id=9999)),
        ("evidence.raw_path_shape", lambda b, so: b.update(raw_path="$.alerts[0].state")),
    ],
)
def test_disabled_rule_does_not_fire(rule: str, breakage: Any) -> None:
    rs = ruleset_with(disabled=(rule,))
    s = scenario("narrow-highcpu")
    breakage(first_binding(s), s.structured_output)
    result = run(s.structured_output, s.tool_invocations, rs)
    assert rule not in result["failed_rules"]
    assert rule not in {m["id"] for m in result["rules"]}
    assert all(e["rule"] != rule for e in result["errors"])
    if rule in ("evidence.excerpt_supported", "contract.answer_version"):
        assert result["status"] == "pass"


def test_binding_cut_short_by_a_disabled_rule_is_skipped() -> None:
    rs = ruleset_with(disabled=("invocation.exists",))
    s = scenario("narrow-highcpu")
    first_binding(s)["source_invocation_id"] = 9999
    result = run(s.structured_output, s.tool_invocations, rs)
    assert result["status"] == "pass"
    assert result["checked_bindings"][0]["status"] == "skipped"


# -- strict excerpt support ------------------------------------------------------------------

REF = demo.LOGS[0]


@pytest.mark.parametrize(
    "excerpt",
    [
        "HikariPool-1 - Connection is not available",
        "hikaripool-1   -\tconnection IS NOT\navailable",
        "ＨｉｋａｒｉＰｏｏｌ－１ - Connection is not available",
        '"request timed out after 30000ms".',
        "\u201crequest timed out after 30000ms\u201d",
        "order-service HikariPool-1 ... request timed out after 30000ms",
        "order-service \u2026 active=50/50, idle=0, waiting=23",
        "...waiting=23",
        "HikariPool-1 \u2013 Connection is not available",
    ],
)
def test_benign_excerpt_variants_are_supported(excerpt: str) -> None:
    m = default_ruleset().matcher
    assert m.is_supported(excerpt, REF)


@pytest.mark.parametrize(
    "excerpt",
    [
        "Connection is available",  # negation removed
        "HikariPool-1 - Connection is ... available",  # negation hidden in an ellipsis gap
        "available, request timed out",  # starts right after "not"
        "request timed out after 3000ms",  # digit dropped
        "request timed out after 30000s",  # unit swapped
        "request timed out after 300",  # number cut inside a token
        "payment-service HikariPool-1",  # entity swapped
        "2026-07-08 23:05:29 ERROR",  # timestamp shifted
        "waiting=23 ... active=50/50",  # parts out of order
        "ERR ... pool",  # a part below min_part_chars
        "",
        "...",
    ],
)
def test_changed_excerpts_are_not_supported(excerpt: str) -> None:
    m = default_ruleset().matcher
    assert not m.is_supported(excerpt, REF)


def test_decimal_numbers_are_not_truncated() -> None:
    m = default_ruleset().matcher
    ref = demo.ALERTS[2]
    assert m.is_supported("p99=4.2s", ref)
    assert not m.is_supported("p99=4", ref)
    assert not m.is_supported("2s, threshold=3s", ref)


# -- bad rule files -----------------------------------------------------------------------------


def _write(tmp_path: Path, doc: Any) -> Path:
    path = tmp_path / "gatekeeper-rules.json"
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc), encoding="utf-8")
    return path


def _edit(doc: dict[str, Any], rule_id: str, **changes: Any) -> dict[str, Any]:
    for rule in doc["rules"]:
        if rule["id"] == rule_id:
            rule.update(changes)
    return doc


@pytest.mark.parametrize(
    ("breakage", "problem"),
    [
        (lambda d: _edit(d, "invocation.exists", default_severity="high"), "default_severity"),
        (lambda d: d["rules"].append(dict(d["rules"][0])), "duplicate rule id"),
        (
            lambda d: d["rules"].append(dict(d["rules"][0], id="evidence.magic")),
            "without an implementation: evidence.magic",
        ),
        (lambda d: d.update(rules=d["rules"][1:]), "not declared"),
        (
            lambda d: _edit(d, "evidence.excerpt_supported", parameters={"min_part_chars": 0}),
            "evidence.excerpt_supported has invalid parameters",
        ),
        (lambda d: _edit(d, "claim.bindings_nonempty", parameters={"x": 1}), "invalid parameters"),
        (lambda d: _edit(d, "claim.bindings_nonempty", weight=3), "weight"),
        (lambda d: d.pop("rule_set_version"), "rule_set_version"),
        (lambda d: _edit(d, "binding.fields", enabled="yes"), "enabled"),
    ],
)
def test_bad_rules_file_raises_config_error(tmp_path: Path, breakage: Any, problem: str) -> None:
    doc = rules_document()
    breakage(doc)
    path = _write(tmp_path, doc)
    with pytest.raises(ConfigError) as info:
        load_ruleset(path)
    message = str(info.value)
    assert str(path) in message
    assert problem in message
    assert "\n" not in message


def test_rules_file_not_json_or_missing(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not JSON"):
        load_ruleset(_write(tmp_path, "{rules: []"))
    with pytest.raises(ConfigError, match="cannot read"):
        load_ruleset(tmp_path / "absent.json")


def test_outcome_type() -> None:
    s = scenario("narrow-highcpu")
    outcome = check(s.structured_output, s.tool_invocations, default_ruleset())
    assert isinstance(outcome, GatekeeperOutcome)
    assert outcome.structured_output == s.structured_output
    assert outcome.structured_output is not s.structured_output


def test_negation_only_matters_in_the_clause_of_a_kept_part() -> None:
    m = default_ruleset().matcher
    ref = "pool is not currently available, request timed out after 30000ms"
    assert not m.is_supported("currently available", ref)
    assert not m.is_supported("pool is ... currently available", ref)
    assert m.is_supported("request timed out", ref)
    assert m.is_supported("pool is not ... request timed out", ref)


def test_only_one_pair_of_quotes_is_stripped() -> None:
    m = default_ruleset().matcher
    ref = "pool stats active=50/50, idle=0, waiting=23"
    assert m.is_supported('"idle=0, waiting=23".', ref)
    assert m.is_supported("\u201cidle=0, waiting=23.\u201d", ref)
    assert not m.is_supported("\"'idle=0, waiting=23'\"", ref)
    assert m.is_supported("active=50/50, idle=0...", ref)


SEED_ALERT = (
    "HighCPUUsage, service=payment-service, state=firing, current=92%, threshold=80%, "
    "duration=25m, pod=pod-payment-service-7d8f9c6b5-x2k4m, active_at=2026-07-08T22:40:12Z"
)


@pytest.mark.parametrize(
    ("excerpt", "supported"),
    [
        # the contract's own example merges fields of one alert, leaving one out
        ("HighCPUUsage, service=payment-service, state=firing, current=92%, duration=25m", True),
        ("HighCPUUsage; current=92%; active_at=2026-07-08T22:40:12Z", True),
        ("payment-service, state=firing, current=92%, duration=25", False),  # value cut
        ("HighCPUUsage, current=93%, duration=25m", False),  # changed value
        ("HighCPUUsage, duration=25m, current=92%", False),  # reordered
        ("HighCPUUsage, cur=92%, duration=25m", False),  # partial middle field
        ("HighCPUUsage, current=92%, threshold=90%", False),  # changed last field
    ],
)
def test_merged_fields_must_be_whole_and_in_order(excerpt: str, supported: bool) -> None:
    assert default_ruleset().matcher.is_supported(excerpt, SEED_ALERT) is supported


def test_cjk_negation_cannot_be_cut_off() -> None:
    m = default_ruleset().matcher
    ref = "query_logs: 当前查询未检索到匹配的日志; total=0"
    assert m.is_supported("当前查询未检索到匹配的日志", ref)
    assert m.is_supported("ＴＯＴＡＬ＝０", ref)
    assert not m.is_supported("检索到匹配的日志", ref)
