"""Does a claim's every fact appear in its evidence, and does any contradict it?

Why three outcomes per fact: a fact the evidence states is ``found``; a fact
the evidence states differently (another value of the same kind: 29% where the
excerpt says 92%, order-service where it says payment-service, "not firing"
where it says firing) is a ``conflict`` and refutes the claim; a fact the
evidence is silent about is neither, and leaves the claim unproven.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import orjson

from services.common.negation import Negations
from services.verifier.facts import PLAIN, Facts, Identifier, Negation, Number, extract
from services.verifier.rules_file import VerifierRules

TOLERANCE = 1e-9


@dataclass(frozen=True, slots=True)
class FactResult:
    kind: str  # number | an identifier kind | negation
    fact: str
    found: bool
    conflict: bool
    detail: str


def same_value(a: float, b: float) -> bool:
    """Equal within a relative tolerance of 1e-9 (4200 ms is 4.2 s despite binary floats)."""
    return abs(a - b) <= TOLERANCE * max(1.0, abs(a), abs(b))


def number_found(number: Number, pool: Iterable[Number]) -> bool:
    """A unit-bearing number matches the same dimension and value; a bare one any raw value."""
    for other in pool:
        if number.dimension == PLAIN:
            if same_value(number.raw, other.raw):
                return True
        elif other.dimension == number.dimension and same_value(number.value, other.value):
            return True
    return False


def _comparable(number: Number, other: Number) -> bool:
    return PLAIN in (number.dimension, other.dimension) or number.dimension == other.dimension


def _where(matches: Sequence[Number]) -> str:
    return ", ".join(dict.fromkeys(repr(m.label) for m in matches))


def number_result(number: Number, pool: Sequence[Number]) -> FactResult:
    """A claim number against the evidence numbers, read with what each one measures.

    A bound number (``current 80%``) is found only as a value of the same
    attribute, and refuted by another value of it (``current=92%``); where the
    evidence binds no value to that attribute it may still match an unbound
    value. An unbound number matches an unbound value, or a value that is the
    only one of its unit in the evidence; a value the evidence binds to another
    attribute (``threshold=80%`` among several percentages) leaves it unproven,
    never supported.
    """
    name = number.attribute or "unbound"
    fact = f"{number.text} [{name}]"
    same = [o for o in pool if number.attribute and o.attribute == number.attribute]
    same = [o for o in same if _comparable(number, o)]
    hits = [o for o in same if number_found(number, (o,))]
    if hits:
        return FactResult("number", fact, True, False, f"stated in evidence as {_where(hits)}")
    if same:
        return FactResult("number", fact, False, True, f"evidence says {_where(same)}")
    matches = [o for o in pool if number_found(number, (o,))]
    kin = [o for o in pool if _comparable(number, o)]
    values = {round(o.value if number.dimension != PLAIN else o.raw, 9) for o in kin}
    free = [m for m in matches if not m.attribute]
    if free or (matches and not number.attribute and len(values) == 1):
        return FactResult(
            "number", fact, True, False, f"stated in evidence as {_where(free or matches)}"
        )
    if matches:
        said = f"evidence states it only as {_where(matches)}"
        detail = (
            f"{said}, not as {name}"
            if number.attribute
            else f"{said}; the claim names no attribute"
        )
        return FactResult("number", fact, False, False, detail)
    conflict = any(o.dimension == number.dimension for o in pool)
    return FactResult(
        "number",
        fact,
        False,
        conflict,
        "differs in evidence" if conflict else "not stated in evidence",
    )


def _in_order(numbers: Sequence[Number], sequence: Sequence[Number]) -> bool:
    """Each number matches a value of ``sequence`` after the previous number's match."""
    position = 0
    for number in numbers:
        position = next(
            (
                i + 1
                for i in range(position, len(sequence))
                if number_found(number, sequence[i : i + 1])
            ),
            -1,
        )
        if position < 0:
            return False
    return True


def order_result(
    claim: Sequence[Number], sequences: Sequence[Sequence[Number]]
) -> FactResult | None:
    """Unbound numbers of a claim, read as the evidence orders its values.

    Why: a number that names no attribute is matched by value, so "heap 4 GB /
    3.8 GB" would find both values in "heap 3.8 GB / 4 GB", and "4 GB / 4 GB"
    would find 4 GB twice. Where a claim states two or more such numbers, they
    must be values of the cited text in the same order, each value used once;
    ``sequences`` are that text's numbers read two ways (the ref texts, and the
    excerpts, each in binding order), and either may hold them. Otherwise the
    claim is not established.
    """
    unbound = [n for n in claim if not n.attribute]
    if len(unbound) < 2 or not sequences:
        return None
    fact = " … ".join(n.text for n in unbound)
    if any(_in_order(unbound, sequence) for sequence in sequences):
        return FactResult("number", fact, True, False, "stated in evidence in this order")
    return FactResult(
        "number", fact, False, False, "evidence does not state these values in this order"
    )


@lru_cache(maxsize=1024)
def _needle(norm: str, prefix: bool) -> re.Pattern[str]:
    tail = "" if prefix else r"(?![a-z0-9])"
    return re.compile(r"(?<![a-z0-9])" + re.escape(norm) + tail)


@lru_cache(maxsize=8)
def identifier_aliases(rules: VerifierRules) -> dict[str, tuple[str, ...]]:
    """The declared aliases of each identifier, casefolded (read once per rule set)."""
    return {
        key.casefold(): tuple(a.casefold() for a in values)
        for key, values in rules.doc.identifier_aliases.items()
    }


def identifier_found(identifier: Identifier, search: str, rules: VerifierRules) -> bool:
    """Written in ``search`` as a whole token, or one of its declared aliases is."""
    if _needle(identifier.norm, False).search(search):
        return True
    aliases = identifier_aliases(rules)
    return any(_needle(a, True).search(search) for a in aliases.get(identifier.norm, ()))


def _negation_found(neg: Negation, evidence: Facts, lexicon: Negations) -> bool:
    if not neg.head:
        return bool(evidence.negations)
    if neg.head.isascii():
        return any(neg.head in other.scope for other in evidence.negations)
    # A Chinese cue against English evidence counts only where the lexicon says the
    # English words negate the same thing: 未出现 is "did not appear", never "not available".
    return any(
        neg.head == o.head or (o.head.isascii() and lexicon.same_negation(neg.head, o.scope))
        for o in evidence.negations
    )


def _negation_conflict(neg: Negation, evidence: Facts) -> bool:
    """The evidence states the negated word plainly, or negates nothing at all."""
    if not evidence.negations:
        return True
    if neg.head.isascii():
        return neg.head in evidence.plain_words
    return neg.head in evidence.cjk_plain


# a quotation in a claim: a log line or message, copied word for word
_QUOTE_MIN = 24


@dataclass(frozen=True, slots=True)
class _Quote:
    """A claim's quotation (``text``, between its quote marks) and how the evidence
    holds it (``held``: the same words, or as a JSON string escapes them)."""

    text: str
    held: str


def _held(text: str, evidence: str) -> str | None:
    """``text`` as the evidence holds it: as is, with its whitespace collapsed (a log
    record's ref text), or escaped as in a JSON string; None if not at all."""
    collapsed = " ".join(text.split())
    forms = (text, collapsed, orjson.dumps(text).decode()[1:-1], json.dumps(text)[1:-1])
    return next((form for form in forms if form and form in evidence), None)


def _copied_quotes(claim: Facts, evidence: Facts) -> list[_Quote]:
    """The claim's quotations that are in the evidence word for word. A quoted log
    message may hold quote marks of its own (``Cannot invoke "x.y()" because …``): each
    quotation runs to the farthest quote mark that keeps it in the evidence."""
    text = claim.search
    marks = [i for i, ch in enumerate(text) if ch == '"']
    found: list[_Quote] = []
    k = 0
    while k < len(marks):
        start = marks[k] + 1
        for m in range(len(marks) - 1, k, -1):
            inner = text[start : marks[m]]
            if len(inner) >= _QUOTE_MIN and (held := _held(inner, evidence.search)):
                found.append(_Quote(inner, held))
                k = m + 1
                break
        else:
            k += 1
    return found


# how much of the evidence before a copied quote may hold the cue of a negation it cuts
_CUT_REACH = 80


def _negates(neg: Negation, text: str, rules: VerifierRules) -> bool:
    return any(n.cue == neg.cue and n.head == neg.head for n in extract(text, rules).negations)


def _cuts(neg: Negation, quote: str, evidence: str, rules: VerifierRules) -> bool:
    """Whether ``quote`` starts, somewhere in ``evidence``, inside ``neg``: its cue just
    before the quote, its head in it ("not" + "degraded" quoted as "degraded")."""
    at = evidence.find(quote)
    while at >= 0:
        before = evidence[max(0, at - _CUT_REACH) : at]
        if _negates(neg, before + quote, rules) and not _negates(neg, before, rules):
            return True
        at = evidence.find(quote, at + 1)
    return False


def _outside_quotes_of(
    neg: Negation, claim: Facts, evidence: Facts, quotes: Sequence[_Quote], rules: VerifierRules
) -> Facts:
    """The claim without those of its copied ``quotes`` that do not cut ``neg`` off.

    A quoted line ("app.throttle … (no throttle class configured)") copies the
    evidence's negation with it, so the plain word beside it drops nothing; nor does
    another passage copied word for word (a description beside the negated summary).
    A quote that starts after the cue and holds the head, or is not in the evidence,
    still counts.
    """
    copied = [
        q
        for q in quotes
        if _negates(neg, q.text, rules) or not _cuts(neg, q.held, evidence.search, rules)
    ]
    if not copied:
        return claim
    text = claim.search
    for q in copied:
        text = text.replace(f'"{q.text}"', " ")
    return extract(text, rules, values=False)


def compare(
    claim: Facts,
    evidence: Facts,
    rules: VerifierRules,
    *,
    negations: bool = True,
    sequences: Sequence[Sequence[Number]] = (),
    values: bool = True,
) -> list[FactResult]:
    """One result per claim fact, plus one per evidence negation the claim drops.

    ``negations=False`` skips both negation checks (a negative observation's
    phrasing is judged separately). ``sequences`` are the evidence's numbers
    in text order, per cited text (see :func:`order_result`).
    """
    results: list[FactResult] = []
    if values:
        results += _value_results(claim, evidence, rules, sequences)
    if not negations:
        return results
    return results + _negation_results(claim, evidence, rules)


def _value_results(
    claim: Facts,
    evidence: Facts,
    rules: VerifierRules,
    sequences: Sequence[Sequence[Number]],
) -> list[FactResult]:
    """The claim's numbers (with their order) and identifiers against the evidence."""
    results = [number_result(number, evidence.numbers) for number in claim.numbers]
    ordered = order_result(claim.numbers, sequences)
    if ordered is not None:
        results.append(ordered)
    for ident in claim.identifiers:
        found = identifier_found(ident, evidence.search, rules)
        conflict = not found and any(i.kind == ident.kind for i in evidence.identifiers)
        detail = "stated" if found else "another value" if conflict else "not stated"
        results.append(FactResult(ident.kind, ident.text, found, conflict, f"{detail} in evidence"))
    return results


def _negation_results(claim: Facts, evidence: Facts, rules: VerifierRules) -> list[FactResult]:
    lexicon = rules.negations
    results: list[FactResult] = []
    for neg in claim.negations:
        text = f"{neg.cue} {neg.head}".strip()
        if _negation_found(neg, evidence, lexicon):
            results.append(FactResult("negation", text, True, False, "negated in evidence"))
        else:
            conflict = _negation_conflict(neg, evidence)
            detail = "claim adds a negation" if conflict else "negation not stated in evidence"
            results.append(FactResult("negation", text, False, conflict, detail))
    dropped: set[str] = set()
    quotes = _copied_quotes(claim, evidence) if evidence.negations else []
    for neg in evidence.negations:
        if not neg.head or neg.head in dropped:
            continue
        outside = _outside_quotes_of(neg, claim, evidence, quotes, rules)
        plain = outside.plain_words if neg.head.isascii() else outside.cjk_plain
        if neg.head in plain:
            dropped.add(neg.head)
            detail = f"evidence says {neg.cue} {neg.head}; claim drops the negation"
            results.append(FactResult("negation", f"{neg.cue} {neg.head}", False, True, detail))
    return results
