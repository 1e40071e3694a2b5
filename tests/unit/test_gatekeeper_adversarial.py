"""The gatekeeper against seeded mutations of the demo scenarios.

Every structural (A), excerpt-edit (B) and negative-evidence (D) mutant must be
rejected for the expected reason; at most 1% of the benign controls (F) may
fail. Run with ``-s`` to see the catch-rate table.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from services.gatekeeper import default_ruleset
from tests.support.gate import gate_json
from tests.support.mutations import Case, generate, norm

# A large generated suite: make test-unit leaves it out, make test runs it.
pytestmark = pytest.mark.slow

FAMILIES = {
    "A": "structural",
    "B": "excerpt edits",
    "D": "negative-evidence misuse",
    "F": "benign controls",
}
CASES_PER_FAMILY = 250
BENIGN_FAILURE_BUDGET = 0.01

Results = dict[str, list[tuple[Case, dict[str, Any]]]]


@pytest.fixture(scope="module")
def results() -> Results:
    rs = default_ruleset()
    return {
        family: [
            (case, gate_json(case.structured_output, case.tool_invocations, rs))
            for case in generate(family, CASES_PER_FAMILY)
        ]
        for family in FAMILIES
    }


def as_expected(case: Case, result: dict[str, Any]) -> bool:
    outcome = (result["status"], result["severity"])
    if case.expected_severity == "none":
        return outcome == ("pass", "none")
    failed: list[str] = result["failed_rules"]
    return outcome == ("fail", case.expected_severity) and any(
        rule in failed for rule in case.expected_rules
    )


def catch_table(results: Results) -> str:
    lines = [
        f"{'family':<28} {'cases':>6} {'as expected':>14} {'rate':>7}",
        "-" * 57,
    ]
    for family, pairs in results.items():
        ok = sum(as_expected(case, result) for case, result in pairs)
        label = f"{family} {FAMILIES[family]}"
        verb = "pass" if family == "F" else "caught"
        lines.append(f"{label:<28} {len(pairs):>6} {ok:>7} {verb:<6} {ok / len(pairs):>7.1%}")
        kinds = Counter(case.kind for case, _ in pairs)
        for kind, total in sorted(kinds.items()):
            good = sum(as_expected(c, r) for c, r in pairs if c.kind == kind)
            lines.append(f"    {kind:<32} {good:>4}/{total:<4}")
    return "\n".join(lines)


def test_generator_is_reproducible_and_large_enough() -> None:
    first, second = generate("B", 60), generate("B", 60)
    assert first == second
    assert generate("B", 60, seed=1) != first
    for family in FAMILIES:
        cases = generate(family, CASES_PER_FAMILY)
        assert len(cases) >= 200
        assert len({case.kind for case in cases}) >= 6


def test_excerpt_mutants_are_really_false(results: Results) -> None:
    """Each B case holds a binding whose normalised excerpt is not in its ref text."""
    for case, _ in results["B"]:
        refs = {
            (inv["id"], ref["raw_path"]): ref["text"]
            for inv in case.tool_invocations
            for ref in inv["retrieval_details"]["evidence_refs"]
        }
        bindings = [b for c in case.structured_output["claims"] for b in c["evidence_bindings"]]
        assert any(
            norm(b["evidence_excerpt"])
            not in norm(refs[(b["source_invocation_id"], b["raw_path"])])
            for b in bindings
        ), case.detail


@pytest.mark.parametrize("family", ["A", "B", "D"])
def test_every_adversarial_mutant_is_rejected(results: Results, family: str) -> None:
    missed = [
        f"{case.kind}: {case.detail} -> {result['severity']} {result['failed_rules']}"
        for case, result in results[family]
        if not as_expected(case, result)
    ]
    assert not missed, "\n".join(missed[:10])


def test_benign_controls_pass(results: Results) -> None:
    failed = [
        f"{case.kind}: {case.detail} -> {[e['message'] for e in result['errors']]}"
        for case, result in results["F"]
        if not as_expected(case, result)
    ]
    assert len(failed) <= BENIGN_FAILURE_BUDGET * len(results["F"]), "\n".join(failed[:10])


def test_catch_rate_table(results: Results) -> None:
    table = catch_table(results)
    print("\ngatekeeper catch rates\n" + table)
    assert "A structural" in table
