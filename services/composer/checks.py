"""The checks an answer (or any text the composer wants to include) must pass.

Why shared: the answer guard runs them on whole answers, and the composer runs
them on each hypothesis, action and gap before using it, so a composed answer
passes the guard by construction rather than by luck.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from services.verifier.facts import Facts, extract
from services.verifier.match import identifier_found, number_found, number_result
from services.verifier.rules_file import OverclaimPhrases, VerifierRules
from tracebound.events import AllowedClaim

_WORDS = re.compile(r"[a-z0-9_]+(?:-[a-z0-9_]+)*|[\u4e00-\u9fff]")
RESTATE_OVERLAP = 0.8


def _negative(claim: AllowedClaim, rules: VerifierRules) -> bool:
    return claim.claim_type in rules.doc.negative_observation.claim_types


def overclaims(
    allowed: Sequence[AllowedClaim], answer: str, phrases: OverclaimPhrases, rules: VerifierRules
) -> list[str]:
    """Over-claim phrases of ``answer`` that no verified positive claim accounts for.

    ``answer`` is expected in NFKC form (the guard normalises it first).
    """
    matches = list(phrases.finditer(answer))
    if not matches:  # the common case: no claim needs looking at
        return []
    positive = [
        unicodedata.normalize("NFKC", c.claim_text).strip()
        for c in allowed
        if not _negative(c, rules) and c.claim_text.strip()
    ]
    spans: dict[str, list[tuple[int, int]]] = {}  # a claim's verbatim spans, found once

    def verbatim(text: str) -> list[tuple[int, int]]:
        if text not in spans:
            found = re.finditer(re.escape(text), answer, re.IGNORECASE)
            spans[text] = [m.span() for m in found]
        return spans[text]

    violations = []
    for match in matches:
        start, end = match.span()
        if any(
            s <= start and end <= e
            for text in positive
            if len(text) >= end - start
            for s, e in verbatim(text)
        ):
            continue
        # A phrase inside a verified claim is tolerated only where the answer repeats that
        # claim word for word (above): a claim that merely contains it — e.g. quoting a log
        # line that says "the service is healthy" — must not license the answer to say it.
        violations.append(f"over-claim phrase {match.group()!r}")
    return list(dict.fromkeys(violations))


def _pool(allowed: Sequence[AllowedClaim], quoted: Sequence[str], rules: VerifierRules) -> Facts:
    texts = [t for c in allowed for t in (c.claim_text, *c.evidence_excerpts)]
    return extract("\n".join([*texts, *quoted]), rules)


def foreign_facts(
    allowed: Sequence[AllowedClaim],
    text: str,
    rules: VerifierRules,
    quoted: Sequence[str] = (),
) -> list[str]:
    """Numbers and identifiers of ``text`` that no allowed claim or excerpt contains.

    A number the answer binds to an attribute must match a value of that
    attribute, as the verifier's facts are matched.

    ``quoted`` is text quoted from the request itself (an answer's alert lines).
    """
    pool = _pool(allowed, quoted, rules)
    facts = extract(text, rules)
    out = []
    for number in facts.numbers:
        if not number_found(number, pool.numbers):
            out.append(f"number {number.text} is in no allowed claim")
            continue
        # Read with what it measures, as the verifier reads it: "CPU at 80%" is not
        # licensed by "threshold=80%". An answer number that names no attribute may repeat
        # any allowed value ("heap: 3.8GB of 4GB" for "heap usage is 3.8 GB of 4 GB").
        bound = number_result(number, pool.numbers)
        if number.attribute and not bound.found:
            out.append(f"number {bound.fact} is not what the allowed claims say ({bound.detail})")
    out += [
        f"{i.kind} {i.text} is in no allowed claim"
        for i in facts.identifiers
        if not identifier_found(i, pool.search, rules)
    ]
    return list(dict.fromkeys(out))


def restated(rejected: str, sentence: str, rules: VerifierRules) -> bool:
    claim_words = set(_WORDS.findall(unicodedata.normalize("NFKC", rejected).casefold()))
    if not claim_words:
        return False
    sentence_words = set(_WORDS.findall(unicodedata.normalize("NFKC", sentence).casefold()))
    if len(claim_words & sentence_words) / len(claim_words) < RESTATE_OVERLAP:
        return False
    facts, here = extract(rejected, rules), extract(sentence, rules)
    return all(number_found(n, here.numbers) for n in facts.numbers) and all(
        identifier_found(i, here.search, rules) for i in facts.identifiers
    )
