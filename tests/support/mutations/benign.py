"""Family F, benign controls: presentation-only changes and back-fillable omissions. Must pass."""

from __future__ import annotations

import random
import re
from collections.abc import Callable

from tests.support import demo_evidence as demo
from tests.support.mutations.base import (
    Maker,
    NotApplicable,
    Outcome,
    claims_of,
    ellipsize,
    fullwidth,
    noise,
    pick,
    quoted,
    recase,
    ref_text,
    shorten,
    whitespace,
)

_FIELD_SPLIT = re.compile(r"\s*[,;]\s*")


def _field_subset(rng: random.Random, s: demo.Scenario) -> Outcome:
    """Several whole fields of the cited item, in ref order, others left out."""
    _, binding = pick(rng, s)
    fields = [f for f in _FIELD_SPLIT.split(ref_text(s, binding)) if len(f) >= 6]
    if len(fields) < 3:
        raise NotApplicable
    kept = sorted(rng.sample(range(len(fields)), k=rng.randint(2, len(fields) - 1)))
    excerpt = rng.choice((", ", "; ")).join(fields[i] for i in kept)
    binding["evidence_excerpt"] = noise(rng, excerpt)
    return (), f"{binding['raw_path']}: fields {kept} of {len(fields)}: {excerpt!r}"


Rewrite = Callable[[random.Random, str], str | None]


def _combined(rng: random.Random, text: str) -> str | None:
    cut = rng.choice((shorten, ellipsize))(rng, text) or text
    return quoted(rng, noise(rng, cut)) if rng.random() < 0.3 else noise(rng, cut)


def _rewrite_excerpts(rewrite: Rewrite) -> Maker:
    def make(rng: random.Random, s: demo.Scenario) -> Outcome:
        bindings = [b for c in claims_of(s) for b in c["evidence_bindings"]]
        chosen = rng.sample(bindings, k=rng.randint(1, len(bindings)))
        changed = []
        for binding in chosen:
            new = rewrite(rng, binding["evidence_excerpt"])
            if new is not None and new != binding["evidence_excerpt"]:
                binding["evidence_excerpt"] = new
                changed.append(f"{binding['raw_path']}: {new!r}")
        return ((), "; ".join(changed)) if changed else None

    return make


def _f_missing_id(rng: random.Random, s: demo.Scenario) -> Outcome:
    _, binding = pick(rng, s)
    if rng.random() < 0.5:
        del binding["source_invocation_id"]
    else:
        binding["source_invocation_id"] = None
    binding["evidence_excerpt"] = noise(rng, binding["evidence_excerpt"])
    return (), f"{binding['raw_path']}: source_invocation_id removed"


def _f_missing_raw_path(rng: random.Random, s: demo.Scenario) -> Outcome:
    _, binding = pick(rng, s)
    path = binding.pop("raw_path")
    if rng.random() < 0.5:
        binding["raw_path"] = None
    if rng.random() < 0.3:
        binding["source_invocation_id"] = None
    binding["evidence_excerpt"] = noise(rng, binding["evidence_excerpt"])
    return (), f"{path}: raw_path removed"


F_MAKERS: tuple[tuple[str, Maker], ...] = (
    ("case", _rewrite_excerpts(recase)),
    ("whitespace", _rewrite_excerpts(whitespace)),
    ("fullwidth", _rewrite_excerpts(fullwidth)),
    ("shortened", _rewrite_excerpts(shorten)),
    ("ellipsis", _rewrite_excerpts(ellipsize)),
    ("quoted", _rewrite_excerpts(quoted)),
    ("combined", _rewrite_excerpts(_combined)),
    ("field_subset", _field_subset),
    ("missing_id", _f_missing_id),
    ("missing_raw_path", _f_missing_raw_path),
)
