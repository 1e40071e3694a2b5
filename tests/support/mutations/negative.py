"""Family D, negative-evidence misuse: ``$.no_evidence`` and negative claims abused. Must reject."""

from __future__ import annotations

import random
from typing import Any

from tests.support import demo_evidence as demo
from tests.support.mutations.base import (
    Maker,
    NotApplicable,
    Outcome,
    claims_of,
    noise,
    norm,
    refs_of,
    shorten,
    tool_of,
)

_POSITIVE_IDS = (demo.METRICS_ID, demo.LOGS_ID, demo.KNOWLEDGE_ID)
_POSITIVE_TYPES = ("observation", "symptom", "root_cause")


def _negative_claim(rng: random.Random, s: demo.Scenario) -> dict[str, Any]:
    """An existing negative claim, or a new correct one appended to the output."""
    negatives = [c for c in claims_of(s) if c["claim_type"] == "negative_observation"]
    if negatives and rng.random() < 0.7:
        return rng.choice(negatives)
    new = demo.claim(
        f"claim-neg-{rng.randrange(100)}",
        "negative_observation",
        demo.NEGATIVE_TEXT,
        dict(demo.NO_INVENTORY_LOGS),
    )
    claims_of(s).append(new)
    return new


def _positive_binding(rng: random.Random, s: demo.Scenario) -> dict[str, Any]:
    """A correct binding of a random positive ref (excerpt shortened and noised)."""
    inv_id = rng.choice(_POSITIVE_IDS)
    path, text = rng.choice(list(refs_of(s, inv_id).items()))
    return demo.bind(inv_id, path, noise(rng, shorten(rng, text, 3) or text))


def _d_binds_positive(rng: random.Random, s: demo.Scenario) -> Outcome:
    claim = _negative_claim(rng, s)
    binding = _positive_binding(rng, s)
    claim["evidence_bindings"] = [binding]
    return ("negative.no_evidence_only",), f"{claim['claim_id']} -> {binding['raw_path']}"


def _d_no_evidence_on_hits(rng: random.Random, s: demo.Scenario) -> Outcome:
    claim = _negative_claim(rng, s)
    inv_id = rng.choice(_POSITIVE_IDS)
    tool = tool_of(s, inv_id)
    excerpt = f"{tool} returned no evidence; evidence_status=no_evidence; total=0"
    binding = demo.bind(inv_id, "$.no_evidence", noise(rng, excerpt))
    claim["evidence_bindings"] = [binding]
    expected = ("evidence.raw_path", "negative.no_evidence_only")
    return expected, f"$.no_evidence on invocation {inv_id} ({tool}, had hits)"


def _d_mixed(rng: random.Random, s: demo.Scenario) -> Outcome:
    claim = _negative_claim(rng, s)
    binding = _positive_binding(rng, s)
    bindings = claim["evidence_bindings"]
    bindings.insert(rng.randrange(len(bindings) + 1), binding)
    return ("negative.no_evidence_only",), f"{claim['claim_id']} also binds {binding['raw_path']}"


def _d_positive_cites_no_evidence(rng: random.Random, s: demo.Scenario) -> Outcome:
    binding = dict(demo.NO_INVENTORY_LOGS)
    binding["evidence_excerpt"] = noise(rng, binding["evidence_excerpt"])
    positives = [c for c in claims_of(s) if c["claim_type"] != "negative_observation"]
    if positives and rng.random() < 0.6:
        claim = rng.choice(positives)
        bindings = claim["evidence_bindings"]
        if rng.random() < 0.5:
            bindings[rng.randrange(len(bindings))] = binding
        else:
            bindings.append(binding)
    else:
        kind = rng.choice(_POSITIVE_TYPES)
        claim = demo.claim("claim-pos", kind, "inventory-service is healthy.", binding)
        claims_of(s).append(claim)
    return (
        "negative.claim_type",
    ), f"{claim['claim_type']} {claim['claim_id']} cites $.no_evidence"


def _d_relabel(rng: random.Random, s: demo.Scenario) -> Outcome:
    positives = [c for c in claims_of(s) if c["claim_type"] != "negative_observation"]
    if not positives:
        raise NotApplicable
    claim = rng.choice(positives)
    claim["claim_type"] = "negative_observation"
    return ("negative.no_evidence_only",), f"{claim['claim_id']} relabelled negative_observation"


_NO_EVIDENCE_EDITS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("total=0", ("total=1", "total=3", "total=12", "total=00")),
    ("inventory-service", ("order-service", "payment-service", "user-service")),
    ("returned no evidence", ("returned evidence", "returned new evidence")),
    ("no matching logs", ("matching logs", "23 matching logs")),
    ("evidence_status=no_evidence", ("evidence_status=supported",)),
    ("topic=application-logs", ("topic=audit-logs",)),
    ("HikariCP", ("Redis", "HikariPool-1")),
)


def _d_no_evidence_edit(rng: random.Random, s: demo.Scenario) -> Outcome:
    claim = _negative_claim(rng, s)
    base = rng.choice((demo.NO_INVENTORY_LOGS["evidence_excerpt"], demo.NO_EVIDENCE_TEXT))
    old, news = rng.choice([edit for edit in _NO_EVIDENCE_EDITS if edit[0] in base])
    mutated = base.replace(old, rng.choice(news), 1)
    if norm(mutated) in norm(demo.NO_EVIDENCE_TEXT):
        return None
    binding = dict(demo.NO_INVENTORY_LOGS, evidence_excerpt=noise(rng, mutated))
    claim["evidence_bindings"] = [binding]
    return ("evidence.excerpt_supported",), f"no-evidence excerpt {old!r} edited"


D_MAKERS: tuple[tuple[str, Maker], ...] = (
    ("negative_binds_positive", _d_binds_positive),
    ("no_evidence_on_hit_invocation", _d_no_evidence_on_hits),
    ("negative_mixed_bindings", _d_mixed),
    ("positive_claim_cites_no_evidence", _d_positive_cites_no_evidence),
    ("positive_relabelled_negative", _d_relabel),
    ("no_evidence_excerpt_edit", _d_no_evidence_edit),
)
