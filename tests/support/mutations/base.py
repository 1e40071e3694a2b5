"""What every mutation family shares: the case record, scenario access, benign text noise."""

from __future__ import annotations

import random
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from services.common.negation import default_negations
from tests.support import demo_evidence as demo

DEFAULT_SEED = 20260708


@dataclass(frozen=True)
class Case:
    family: str
    kind: str
    structured_output: dict[str, Any]
    tool_invocations: list[dict[str, Any]]
    expected_severity: str  # "reject" for A/B/D, "none" for F
    expected_rules: tuple[str, ...]  # at least one must fire (empty for F)
    detail: str


Outcome = tuple[tuple[str, ...], str] | None
Maker = Callable[[random.Random, demo.Scenario], Outcome]


def norm(text: str) -> str:
    """The oracle's own normalisation: NFKC, casefold, whitespace runs to one space."""
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text).casefold()).strip()


# -- scenario access -------------------------------------------------------------


def refs_of(scenario: demo.Scenario, inv_id: int) -> dict[str, str]:
    for inv in scenario.tool_invocations:
        if inv["id"] == inv_id:
            refs = inv["retrieval_details"]["evidence_refs"]
            return {ref["raw_path"]: ref["text"] for ref in refs}
    return {}


def tool_of(scenario: demo.Scenario, inv_id: int) -> str:
    return str(next(i["tool_name"] for i in scenario.tool_invocations if i["id"] == inv_id))


def claims_of(scenario: demo.Scenario) -> list[dict[str, Any]]:
    claims: list[dict[str, Any]] = scenario.structured_output["claims"]
    return claims


class NotApplicable(Exception):
    """This mutation does not fit the chosen scenario; the generator tries another."""


def pick(
    rng: random.Random, scenario: demo.Scenario, *, negative: bool | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A random (claim, binding); ``negative`` filters on negative_observation claims."""
    pairs = [
        (c, b)
        for c in claims_of(scenario)
        for b in c["evidence_bindings"]
        if negative is None or (c["claim_type"] == "negative_observation") == negative
    ]
    if not pairs:
        raise NotApplicable
    return rng.choice(pairs)


def ref_text(scenario: demo.Scenario, binding: dict[str, Any]) -> str:
    return refs_of(scenario, binding["source_invocation_id"])[binding["raw_path"]]


# -- benign transforms -----------------------------------------------------------


def fullwidth(rng: random.Random, text: str) -> str:
    return "".join(
        chr(ord(c) + 0xFEE0) if "!" <= c <= "~" and rng.random() < 0.5 else c for c in text
    )


def whitespace(rng: random.Random, text: str) -> str:
    runs = (" ", "  ", "\t", "\n", " \u3000", "\u00a0", " \n ")
    spaced = "".join(rng.choice(runs) if c == " " and rng.random() < 0.6 else c for c in text)
    return rng.choice(("", " ", "\n", "\t ")) + spaced + rng.choice(("", " ", "\n"))


def recase(rng: random.Random, text: str) -> str:
    return rng.choice((text.upper(), text.lower(), text.swapcase(), text.title()))


def quoted(rng: random.Random, text: str) -> str:
    opening, closing = rng.choice((('"', '"'), ("\u201c", "\u201d"), ("'", "'"), ("「", "」")))
    kind = rng.randrange(3)
    if kind == 0:
        return f"{opening}{text}{closing}"
    period = rng.choice((".", "\u3002"))
    return f"{opening}{text}{closing}{period}" if kind == 1 else f"{text}{period}"


def noise(rng: random.Random, text: str) -> str:
    """Zero or more presentation-only transforms; the normalised text is unchanged."""
    for transform in (recase, whitespace, fullwidth):
        if rng.random() < 0.4:
            text = transform(rng, text)
    return text


def is_negation(token: str) -> bool:
    word = re.sub(r"[^\w']", "", token.casefold())
    return default_negations().english_cue([word], 0)


def shorten(rng: random.Random, text: str, min_tokens: int = 2) -> str | None:
    """A contiguous run of whole tokens, not starting right after a negation."""
    tokens = text.split(" ")
    if len(tokens) < min_tokens + 1:
        return None
    for _ in range(10):
        start = rng.randrange(0, len(tokens) - min_tokens + 1)
        end = rng.randrange(start + min_tokens, len(tokens) + 1)
        if (start, end) == (0, len(tokens)) or (start > 0 and is_negation(tokens[start - 1])):
            continue
        piece = " ".join(tokens[start:end])
        if len(norm(piece)) >= 8:
            return piece
    return None


def ellipsize(rng: random.Random, text: str) -> str | None:
    """Two or three in-order token runs joined by an ellipsis; no gap hides a negation."""
    tokens = text.split(" ")
    if len(tokens) < 4:
        return None
    for _ in range(10):
        cuts = sorted(rng.sample(range(1, len(tokens)), k=min(len(tokens) - 1, rng.choice((3, 4)))))
        bounds = [0, *cuts, len(tokens)]
        runs = [(bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1)]
        kept = runs[::2]
        gaps = runs[1::2]
        parts = [" ".join(tokens[a:b]) for a, b in kept]
        if any(len(norm(p)) < 6 for p in parts) or len(parts) < 2:
            continue
        if any(is_negation(tokens[i]) for a, b in gaps for i in range(a, b)):
            continue
        joiner = rng.choice((" ... ", "...", " \u2026 ", "\u2026", " ...", "... "))
        return joiner.join(parts)
    return None
