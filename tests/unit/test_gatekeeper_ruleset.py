"""The rule file: every rule declared, disabled rules, severities, bad files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from services.gatekeeper import default_ruleset, load_ruleset, parse_ruleset
from services.gatekeeper.ruleset import DEFAULT_RULES_PATH, RULE_PARAMETERS, Ruleset
from tests.support.gate import assert_fails, first_binding, scenario
from tests.support.gate import gate_json as run
from tracebound.errors import ConfigError


def rules_document() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DEFAULT_RULES_PATH.read_text(encoding="utf-8"))
    return data


def ruleset_with(disabled: tuple[str, ...] = ()) -> Ruleset:
    doc = rules_document()
    for rule in doc["rules"]:
        if rule["id"] in disabled:
            rule["enabled"] = False
    return parse_ruleset(doc, "test-rules.json")


def test_default_rules_file_declares_every_rule() -> None:
    rs = default_ruleset()
    assert rs.version == "gatekeeper-rules-v3"
    assert set(rs.order) == set(RULE_PARAMETERS)
    meta = rs.metadata()
    assert {m["id"] for m in meta} == rs.enabled_ids
    assert all(set(m) == {"id", "description", "enabled", "default_severity"} for m in meta)


# -- severities and disabled rules --------------------------------------------------------


def test_reject_outranks_low_confid_and_failed_rules_follow_file_order() -> None:
    s = scenario("narrow-highcpu")
    s.structured_output["answer_version"] = "v1"
    extra = dict(first_binding(s), source_invocation_id=9999)
    s.structured_output["claims"][0]["evidence_bindings"].append(extra)
    s.structured_output["claims"][0]["evidence_bindings"].append(dict(extra))
    result = run(s.structured_output, s.tool_invocations)
    assert_fails(result, "reject")
    assert result["failed_rules"] == [
        "contract.answer_version",
        "claim.duplicate_binding",
        "invocation.exists",
    ]


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
