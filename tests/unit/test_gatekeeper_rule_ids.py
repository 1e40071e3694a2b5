"""The gatekeeper's rule ids: one enumeration, held to the rules file and used by every guard."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

from services.gatekeeper import parse_ruleset
from services.gatekeeper.rule_ids import RuleId
from services.gatekeeper.ruleset import DEFAULT_RULES_PATH, RULE_PARAMETERS
from tracebound.errors import ConfigError

GATEKEEPER = Path(__file__).resolve().parents[2] / "services" / "gatekeeper"


def _document() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DEFAULT_RULES_PATH.read_text(encoding="utf-8"))
    return data


def test_the_file_declares_exactly_the_enumeration() -> None:
    assert [r["id"] for r in _document()["rules"]] == [str(r) for r in RuleId]
    assert set(RULE_PARAMETERS) == set(RuleId)


def test_an_id_unknown_to_the_code_is_named() -> None:
    doc = _document()
    doc["rules"].append(dict(doc["rules"][0], id="evidence.magic"))
    with pytest.raises(ConfigError, match=r"without an implementation: evidence\.magic"):
        parse_ruleset(doc, "test-rules.json")


@pytest.mark.parametrize("missing", list(RuleId))
def test_a_code_id_missing_from_the_file_is_named(missing: RuleId) -> None:
    doc = _document()
    doc["rules"] = [r for r in doc["rules"] if r["id"] != missing]
    with pytest.raises(ConfigError, match=f"not declared.*{missing.value}"):
        parse_ruleset(doc, "test-rules.json")


def test_no_guard_names_a_rule_by_a_string() -> None:
    ids = {str(r) for r in RuleId}
    for path in GATEKEEPER.glob("*.py"):
        if path.name == "rule_ids.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef)
            and node.body
            and isinstance(node.body[0], ast.Expr)
        }
        literals = [
            n.value
            for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings
        ]
        assert not ids & set(literals), path.name
