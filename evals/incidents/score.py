"""Scoring of one diagnosis against an incident's answer key.

Patterns are Python regular expressions, searched case-insensitively. The cause is
named when a cause pattern matches a verified claim of type ``root_cause`` or the
first hypothesis the answer shows (the composer withholds one that states a fact no
verified claim holds; a user never reads it). A fact is found when any of its
patterns matches the answer text or any verified claim. A false statement is made
when one of its patterns matches its scope: ``cause`` (root-cause claims and every
allowed hypothesis) or ``any`` (answer text, every claim and every hypothesis).

A ``\\b`` before a number in a pattern marks where the number starts: it does not
match inside a decimal, so ``\\b8\\s*GiB`` does not match the ``8`` of ``3.8 GiB``.
A ``\\b`` after a number marks where it ends: not before a decimal or thousands part,
nor before a percent sign unless the pattern itself goes on to one. So a count
``max\\W+\\b100\\b`` does not match the percentage in "max 100%".
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from evals.incidents.model import Incident


@dataclass(frozen=True)
class Score:
    cause_named: bool
    facts_found: tuple[str, ...]
    facts_missing: tuple[str, ...]
    false_statements: tuple[str, ...]


# ``\b`` followed by a digit, a digit class, or a group whose first branch starts with one
_NUMBER_START = re.compile(r"\\b(?=(?:\((?:\?:)?)?(?:\d|\\d|\[\d))")


# a digit, or a group of digits and alternatives only, such as ``(?:10|25|100)``
_NUMBER_BEFORE = re.compile(r"(?:\d|\((?:\?:)?[\d|]+\))$")
_NOT_A_WHOLE_NUMBER = r"\b(?![.,]\d)"
_NOT_A_PERCENTAGE = r"(?!\s*%)"


def _ended(pattern: str) -> str:
    """``pattern`` with each ``\\b`` after a number made to end that number."""
    parts = pattern.split(r"\b")
    out = parts[0]
    for i, part in enumerate(parts[1:], start=1):
        if _NUMBER_BEFORE.search(parts[i - 1]) and not parts[i - 1].endswith("\\"):
            goes_on_to_percent = any("%" in later for later in parts[i:])
            out += _NOT_A_WHOLE_NUMBER + ("" if goes_on_to_percent else _NOT_A_PERCENTAGE)
        else:
            out += r"\b"
        out += part
    return out


def _compiled(pattern: str) -> re.Pattern[str]:
    started = _NUMBER_START.sub(r"(?<![\\d.])\\b", _ended(pattern))
    return re.compile(started, re.IGNORECASE)


def _matches(patterns: Iterable[str], texts: Sequence[str]) -> bool:
    compiled = [_compiled(p) for p in patterns]
    return any(c.search(t) for c in compiled for t in texts)


def score(
    incident: Incident,
    claims: Sequence[tuple[str, str]],
    hypotheses: Sequence[str],
    answer_text: str,
    *,
    shown: Sequence[str] | None = None,
) -> Score:
    """Score a diagnosis: ``claims`` are the (claim_type, claim_text) of verified claims,
    ``hypotheses`` the allowed ones and ``shown`` those the answer shows (default: all)."""
    key = incident.key
    root = [text for kind, text in claims if kind == "root_cause"]
    first = list(hypotheses if shown is None else shown)[:1]
    cause_named = _matches(key.cause.patterns, [*root, *first])
    fact_texts = [answer_text, *(text for _, text in claims)]
    found = tuple(f.id for f in key.facts if _matches(f.patterns, fact_texts))
    missing = tuple(f.id for f in key.facts if f.id not in found)
    scopes = {
        "cause": [*root, *hypotheses],
        "any": [answer_text, *(text for _, text in claims), *hypotheses],
    }
    false = tuple(s.id for s in key.false if _matches(s.patterns, scopes[s.scope]))
    return Score(cause_named, found, missing, false)


def shown_in(answer_text: str, hypotheses: Sequence[str]) -> list[str]:
    """The hypotheses the answer text shows, in their order (the composer writes each in
    NFKC form, stripped)."""
    answer = unicodedata.normalize("NFKC", answer_text)
    return [h for h in hypotheses if unicodedata.normalize("NFKC", h).strip() in answer]
