"""Seeded, reproducible mutations of the demo scenarios for the gatekeeper.

Families (each case mutates a fresh copy of one correct scenario):

* ``A`` structural: fake or other-tool invocation ids, bad raw_paths, excerpts
  from another invocation, duplicate array items, forbidden fields. Must reject.
* ``B`` excerpt edits: a digit, number, unit, entity (swapped for another value
  of the same tool output), negation or timestamp changed. Must reject.
* ``D`` negative-evidence misuse: negative claims bound to positive refs,
  ``$.no_evidence`` cited on an invocation with hits, mixed bindings, edited
  no-evidence text. Must reject.
* ``F`` benign controls: case, whitespace, full-width, shortened and
  ellipsis-joined excerpts, whole fields of an item merged in order, wrapping
  quotes, back-fillable missing ids or raw_paths. Must pass.

The claim and answer classes of the verifier and the answer guard (value swaps,
digit and unit edits, negation and cause insertion …) are the ``adversarial``
subpackage.

The oracle here is independent of the gatekeeper: a B mutant is kept only when
its NFKC/casefold/whitespace-normalised text differs from the original and is
not a substring of the ref text, so a "caught" count is never inflated by
mutants that are still true. Randomness comes only from ``random.Random(seed)``
and list order, never from set or hash order.
"""

from __future__ import annotations

import random

from tests.support import demo_evidence as demo
from tests.support.mutations.base import DEFAULT_SEED, Case, Maker, NotApplicable, norm
from tests.support.mutations.benign import F_MAKERS
from tests.support.mutations.excerpt_edits import B_MAKERS
from tests.support.mutations.negative import D_MAKERS
from tests.support.mutations.structural import A_MAKERS

__all__ = ["Case", "generate", "norm"]


MAKERS: dict[str, tuple[tuple[str, Maker], ...]] = {
    "A": A_MAKERS,
    "B": B_MAKERS,
    "D": D_MAKERS,
    "F": F_MAKERS,
}
EXPECTED_SEVERITY = {"A": "reject", "B": "reject", "D": "reject", "F": "none"}


def generate(family: str, count: int = 250, seed: int = DEFAULT_SEED) -> list[Case]:
    """``count`` cases of one family; the same seed always yields the same cases.

    Kinds are visited round-robin so every kind is represented; a mutation that
    does not fit the drawn scenario is redrawn.
    """
    rng = random.Random(f"{seed}/{family}")
    makers = MAKERS[family]
    cases: list[Case] = []
    attempts = 0
    while len(cases) < count:
        attempts += 1
        if attempts > count * 50:
            raise RuntimeError(f"family {family}: only {len(cases)} cases after {attempts} draws")
        kind, make = makers[len(cases) % len(makers)]
        scenario = rng.choice(demo.scenarios())
        try:
            outcome = make(rng, scenario)
        except NotApplicable:
            continue
        if outcome is None:
            continue
        rules, detail = outcome
        cases.append(
            Case(
                family=family,
                kind=kind,
                structured_output=scenario.structured_output,
                tool_invocations=scenario.tool_invocations,
                expected_severity=EXPECTED_SEVERITY[family],
                expected_rules=rules,
                detail=f"{scenario.name}: {detail}",
            )
        )
    return cases
