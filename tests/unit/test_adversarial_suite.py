"""The adversarial groundedness suite: edited claims and answers never pass, true ones do.

Claims of many shapes (the rules executor's alert and log claims, other
wordings of every demo alert, runbook sentences, the demo scenarios' claims;
English and Chinese) are edited one fact at a time against their untouched
evidence, and judged by the real gatekeeper and verifier; composed answers get
a cause or a version inserted, and are judged by the answer guard. Run with
``-s`` (or ``python -m tests.support.mutations.adversarial``) to see the per-class table
docs/groundedness.md quotes.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest

from tests.support.mutations.adversarial.edits import BENIGN, FALSIFYING, NUMBER, identifier_digit
from tests.support.mutations.adversarial.report import (
    ANSWER_FALSIFYING,
    CLASSES,
    SEED,
    Outcome,
    is_benign,
    run,
    table,
)
from tests.support.mutations.adversarial.shapes import shapes

# A large generated suite: make test-unit leaves it out, make test runs it.
pytestmark = pytest.mark.slow

FALSE_REJECT_BUDGET = 0.01
MIN_CASES = 40  # per falsifying class


def test_every_class_is_large_and_covers_both_languages() -> None:
    outcomes = run()
    counts = Counter(o.cls for o in outcomes)
    for cls in (*FALSIFYING, *ANSWER_FALSIFYING):
        assert counts[cls] >= MIN_CASES, (cls, counts[cls])
    for cls in BENIGN:
        assert counts[cls] >= 15, (cls, counts[cls])
    sources = Counter((s.source, s.lang) for s in shapes())
    for source in ("alert", "log", "knowledge"):
        assert sources[(source, "en")] and sources[(source, "zh")], sources
    assert set(counts) == set(CLASSES)


def test_no_edited_claim_or_answer_passes() -> None:
    print("\n" + table(run()))
    slipped = [o for o in run() if not is_benign(o.cls) and not o.ok]
    assert not slipped, [(o.cls, o.shape, o.text, o.reason) for o in slipped[:10]]


def test_benign_variants_are_rarely_rejected() -> None:
    by_class: dict[str, list[Outcome]] = {}
    for outcome in run():
        if is_benign(outcome.cls):
            by_class.setdefault(outcome.cls, []).append(outcome)
    for cls, outcomes in by_class.items():
        rejected = [o for o in outcomes if not o.ok]
        assert len(rejected) <= FALSE_REJECT_BUDGET * len(outcomes), (
            cls,
            [(o.shape, o.text, o.reason) for o in rejected[:5]],
        )


def test_the_edits_are_seeded() -> None:
    text = "user-service returned HTTP 500 after 5200ms, p99 4.2s over a 3s threshold"
    evidence = "HTTP 500 duration=5200ms p99=4.2s threshold=3s current=4.2s for 10m"

    def edits(seed: int) -> list[str]:
        rng = random.Random(seed)
        return [t for edit in FALSIFYING.values() for t in edit(rng, text, evidence)]

    assert edits(SEED) == edits(SEED)
    assert edits(SEED) != edits(SEED + 1)
    assert run() is run()


def test_the_oracle_keeps_only_real_edits() -> None:
    """A digit edit that yields a token the evidence states is no falsification."""
    evidence = "GET /api/v1/users took 5ms; GET /api/v2/users took 7ms"
    stated = {"/api/v1/users", "/api/v2/users"}
    for seed in range(30):
        for text in identifier_digit(random.Random(seed), "GET /api/v1/users", evidence):
            assert text.split()[1] not in stated, text
    assert NUMBER.search("current=92%")
    assert not NUMBER.search("pod-order-service-5c9d7b8f4-q7n2p HikariPool-1 /api/v1 p99 23:05:28")
