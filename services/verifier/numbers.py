"""A claim's numbers against the typed quantities of the items it cites.

A number must be a value of the cited item in any of its written forms; a
number the claim calls a bound must be a bound of the item, and one it states
plainly must not be only a bound (a swapped threshold); rounding is allowed
only where the claim says "about". A comparison between a value and a bound
must hold (:mod:`services.verifier.comparisons`), plain numbers named by nothing
keep the item's order, and a fraction (``50/50``) is one fact.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import replace

from services.verifier.comparisons import Compared, comparisons, relation_between
from services.verifier.cues import Clauses, Cues, cues_of
from services.verifier.evidence_types import (
    KEYED_END,
    TOLERANCE,
    Evidence,
    Result,
    Typed,
    context_of,
    neighbours,
)
from services.verifier.quantities import (
    PLAIN,
    Lexicon,
    Quantity,
    Token,
    read_quantities,
)

# a number written as a label's value: ``key=3``, ``key=-3``
_LABEL_VALUE = re.compile(r"\w=-?$")


def _same(a: float, b: float) -> bool:
    return abs(a - b) <= TOLERANCE * max(1.0, abs(a), abs(b))


def matches(q: Quantity, approx: bool, e: Typed) -> bool:
    """Whether evidence quantity ``e`` states claim quantity ``q`` (at its precision if approx)."""
    if q.dimension == PLAIN:  # a number without a unit, named by its metric ("RPS 570")
        # a count or a rate may be named by its metric alone ("RPS 570"); a duration, a size
        # or a percentage is never stated without its unit: "HTTP 5200" is not 5200ms
        if _same(e.quantity.raw, q.raw) and e.quantity.dimension in (PLAIN, "rate"):
            return True
        return any(d == PLAIN and _same(v, q.readings[0][1]) for d, v in e.readings)
    for dimension, value in q.readings:
        scale = value / q.raw if q.raw else 1.0
        for other_dimension, other in e.readings:
            if other_dimension != dimension:
                continue
            if _same(other, value):
                return True
            if approx and scale and round(other / scale, q.decimals) == round(q.raw, q.decimals):
                return True
    return False


def _describe(q: Quantity, cues: Cues) -> str:
    roles = [r for r, on in (("bound", cues.bound), (cues.relation, bool(cues.relation))) if on]
    return f"{q.text} [{', '.join(roles)}]" if roles else q.text


def _same_place(q: Quantity, context: frozenset[str], evidence: Evidence) -> list[Typed]:
    """The item's numbers of ``q``'s kind named by the word that names ``q`` in the claim
    (``current 10%`` and ``current=85%``); a word that names several values names none."""
    if not context:
        return []
    kinds = {d for d, _ in q.readings}
    named: dict[str, list[Typed]] = {}
    for e in evidence.quantities:
        if q.dimension != PLAIN and not kinds & {d for d, _ in e.readings}:
            continue
        for word in e.context & context:
            named.setdefault(word, []).append(e)
    places: list[Typed] = []
    for word, found in named.items():
        values = {round(v, 9) for e in found for d, v in e.readings[:1]}
        if len(values) == 1 and not word[0].isdigit():
            places += found
    return places


VERBATIM_CHARS = 24
# what may close a claim after its last number: full stops and closing quotes
_CLOSING = ".\"'\u201d\u2019 "


def _verbatim(normal: str, q: Quantity, evidence: Evidence) -> bool:
    """Whether ``q`` stands in the item with the same text on both sides of it."""
    start = max(q.start - VERBATIM_CHARS, 0)
    # the words after the number carry its relation: at least a few of them, all the
    # claim has but a closing quote or full stop when it ends there
    tail = normal[q.end :].rstrip(_CLOSING)
    least_after = max(min(VERBATIM_CHARS // 3, len(tail)), 1)
    folded = normal.casefold()
    if len(folded) != len(normal):  # a letter that folds to two ("ß"): fold each slice
        folded = ""
    for end in range(min(q.end + VERBATIM_CHARS, len(normal)), q.end + least_after - 1, -1):
        if (q.start - start) + (end - q.end) < VERBATIM_CHARS:
            return False
        window = folded[start:end] if folded else normal[start:end].casefold()
        if window in evidence.search:
            return True
    return False


def _verbatim_quote(token: Token, evidence: Evidence) -> bool:
    """Whether ``token`` is a quote the item writes as it is, as whole words, at least a
    verbatim window long."""
    return (
        token.kind == "quoted" and len(token.norm) >= VERBATIM_CHARS and evidence.writes(token.norm)
    )


def _quoted(q: Quantity, quotes: Sequence[tuple[int, int]]) -> bool:
    """Whether ``q`` stands inside one of ``quotes`` (their spans in the claim)."""
    return any(start <= q.start and q.end <= end for start, end in quotes)


def check_quantities(
    normal: str, evidence: Evidence, lex: Lexicon, tokens: list[Token]
) -> list[Result]:
    """One result per number of the claim, plus its comparisons and its plain order."""
    results: list[Result] = []
    # a number the claim writes in the item's own words, several words each side, says
    # what the item says there ("failure ratio 0.54 over 200 calls" of a quoted log line)
    claimed = read_quantities(normal, tokens, lex)
    clauses = Clauses(normal)
    typed: list[Compared] = []
    compared: list[Compared] = []  # every number, for comparisons
    previous: Cues | None = None
    # a quote the item writes as it is, as long as a verbatim window at least and
    # ending where the item's words end: each number in it says what the item says there
    quotes = [(t.start, t.end) for t in tokens if _verbatim_quote(t, evidence)]
    for position, q in enumerate(claimed):
        cues = cues_of(normal, q, lex, neighbours(claimed, position), clauses=clauses)
        # "the threshold of 1000 is below 4210": the relation word is the bound's
        after_bound = previous is not None and previous.bound and cues.relation
        if after_bound and relation_between(normal, claimed[position - 1], q, lex):
            cues = replace(cues, relation="")
        previous = cues
        if _verbatim(normal, q, evidence) or _quoted(q, quotes):  # established; may be compared
            compared.append((q, cues, [e for e in evidence.quantities if matches(q, False, e)]))
            continue
        context = context_of(normal, q, claimed, position, lex, clauses=clauses)
        found = [e for e in evidence.quantities if matches(q, cues.approx, e)]
        same_place = _same_place(q, context, evidence)
        uncued = not (cues.relation or cues.bound or cues.total or cues.window or cues.approx)
        keyed = KEYED_END.search(normal[max(0, q.start - 3) : q.start]) is not None
        if same_place and (uncued or keyed) and not any(e in same_place for e in found):
            # "current 10%" where the item says current=85%: the words that name a value in
            # the item name another value in the claim
            said = ", ".join(dict.fromkeys(e.quantity.text for e in same_place))
            results.append(Result("number", q.text, False, True, f"the item says {said} there"))
            typed.append((q, cues, []))
            compared.append(typed[-1])
            continue
        typed.append((q, cues, found))
        compared.append(typed[-1])
        results.append(_number_result(q, cues, found, evidence))
    results += comparisons(normal, compared, lex)
    results += _repeats(typed)
    ordered = _order(typed, normal)
    if ordered is not None:
        results.append(ordered)
    return results


def _exceeded(q: Quantity, evidence: Evidence) -> bool:
    """ "More than 8 days", "8 天多": a duration of the item that, cut to the claim's own
    unit and precision, is the claim's number (8d 9h is more than 8 days, 900 s is not
    more than 400 s in that sense)."""
    if q.dimension != "duration" or not q.raw:
        return False
    wanted = q.readings[0][1]
    unit = wanted / q.raw
    step = 10.0**-q.decimals
    return any(
        d == "duration"
        and v > wanted
        and abs(math.floor(v / unit / step) * step - q.raw) < step / 2
        for e in evidence.quantities
        if not e.bound
        for d, v in e.readings
    )


def _held_by_values(
    q: Quantity, relation: str, found: list[Typed], evidence: Evidence
) -> bool | None:
    """ "低于 85%" where 85 % is the item's threshold: does the item's value stand below it?
    None when the number is not a bound of the item or the item has no value to compare."""
    if not any(e.bound for e in found):
        return None
    dimensions = {d for e in found for d, _ in e.readings if e.bound}
    limit = {d: v for e in found if e.bound for d, v in e.readings}
    outcomes = []
    for e in evidence.quantities:
        if e.bound or e.total:
            continue
        for d, v in e.readings:
            if d in dimensions and d == e.quantity.dimension:
                outcomes.append(v > limit[d] if relation == "gt" else v < limit[d])
    if not outcomes:
        return None
    return any(outcomes)


def _other_value(q: Quantity, cues: Cues, evidence: Evidence) -> str | None:
    """A claim value that the item states otherwise: a quantity of its unit's kind in the
    same role (a value for a value, a bound for a bound). Plain numbers, windows and
    approximate or compared figures are never said to be contradicted."""
    if q.dimension == PLAIN or cues.window or cues.approx or cues.relation or cues.total:
        return None
    for e in evidence.quantities:
        if e.quantity.dimension != q.dimension or e.total:
            continue
        if e.bound == cues.bound:
            return e.quantity.text
    return None


def _only_exact(q: Quantity, found: list[Typed]) -> bool:
    """Whether every match is an exact value of the item (``attempts=5``, "restarted 6
    times"): no bound, total or relation of its own. A duration is left out: "over 5m"
    is as often a window."""
    return q.dimension != "duration" and all(not (e.bound or e.total or e.relation) for e in found)


def _number_result(  # noqa: PLR0911 - one outcome per role a claim can give a number
    q: Quantity, cues: Cues, found: list[Typed], evidence: Evidence
) -> Result:
    """A bound must be a bound (or a whole) of the item, a plain value must not be only a
    bound of it; a relation must not be the opposite of the item's own."""
    fact = _describe(q, cues)
    if not found:
        return _unmatched(q, cues, fact, evidence)
    if cues.window:  # a window may be written as the rule's: "rate(...[5m]) > 2%"
        return _matched(q, found, "number", True, "a window of the cited item")
    if cues.bound:
        ok = any(e.bound or e.total for e in found)
        why = "a bound of the cited item" if ok else "the item states it as a value, not a bound"
        return _matched(q, [e for e in found if e.bound or e.total] or found, "number", ok, why)
    if cues.relation:
        opposite = "lt" if cues.relation == "gt" else "gt"
        if all(e.relation == opposite for e in found):
            return Result("relation", fact, False, True, "the item states the opposite relation")
        if _held_by_values(q, cues.relation, found, evidence) is False:
            detail = "the item's value does not stand in this relation to it"
            return Result("relation", fact, False, True, detail)
        if not cues.inclusive and _only_exact(q, found):
            # "more than 5 times" where the item counts attempts=5
            detail = f"the item states exactly {found[0].label!r}"
            return Result("relation", fact, False, True, detail)
        return _matched(q, found, "number", True, "stated in the cited item")
    if not cues.total and all(e.bound or e.total for e in found):
        why = "the item states it as a threshold, limit or total, not as a value"
        return _matched(q, found, "number", False, why)
    values = [e for e in found if not (e.bound or e.total)] or found
    return _matched(q, values, "number", True, "a value of the cited item")


def _unmatched(q: Quantity, cues: Cues, fact: str, evidence: Evidence) -> Result:
    if cues.relation == "gt" and not cues.bound and _exceeded(q, evidence):
        return Result("number", fact, True, False, "a longer duration of the cited item")
    other = _other_value(q, cues, evidence)
    if other is not None:
        return Result("number", fact, False, True, f"the item states {other}")
    return Result("number", fact, False, False, "not stated in the cited item")


def _matched(q: Quantity, found: list[Typed], kind: str, ok: bool, why: str) -> Result:
    """The result named by the field it was checked against: ``92% [current]``."""
    best = next((e for e in found if e.key), found[0])
    place = best.key or ("bound" if best.bound else "total" if best.total else "")
    fact = f"{q.text} [{place}]" if place else q.text
    return Result(kind, fact, ok, False, f"{why}: {best.label!r}")


def _repeats(typed: list[Compared]) -> list[Result]:
    """A value stated more often than the item states it ("3.3 GB / 3.3 GB" where the item
    says 3.3 GB / 4 GB): one of the two is not the item's."""
    results = []
    groups: dict[tuple[tuple[str, float], ...], list[list[Typed]]] = {}
    for q, _, found in typed:
        if found:
            groups.setdefault(tuple((d, round(v, 9)) for d, v in q.readings), []).append(found)
    for readings, founds in groups.items():
        if len(founds) < 2:
            continue
        union = {(e.source, e.quantity.start): e for found in founds for e in found}
        per_source: dict[int, int] = {}
        for source, _start in union:
            per_source[source] = per_source.get(source, 0) + 1
        if len(founds) > max(per_source.values()):
            fact = f"{readings[0][1]:g} {readings[0][0]} x{len(founds)}"
            detail = "the claim states this value more often than the item does"
            results.append(Result("number", fact, False, False, detail))
    return results


def _order(typed: list[Compared], normal: str) -> Result | None:
    """Numbers of one kind named by nothing (two pids, two durations) keep the item's order.

    A label's value (``partition=3``, ``id=-17``) is named by its label: a claim may list
    the labels after the values where the item lists them before."""
    for dimension in {q.dimension for q, _, _ in typed}:
        plain = [
            (q, found)
            for q, c, found in typed
            if q.dimension == dimension
            and not (c.bound or c.relation or c.total or c.window)
            and not _LABEL_VALUE.search(normal[max(0, q.start - 3) : q.start])
        ]
        if len(plain) < 2 or not all(found for _, found in plain):
            continue
        if not _in_order(plain):
            fact = " … ".join(q.text for q, _ in plain)
            detail = "the item does not state these values in this order"
            return Result("number", fact, False, False, detail)
    return None


def _in_order(plain: list[tuple[Quantity, list[Typed]]]) -> bool:
    sources = {e.source for _, found in plain for e in found}
    for source in sources:
        position = -1
        for _q, found in plain:
            starts = sorted(
                e.quantity.start
                for e in found
                if e.source == source and e.quantity.start > position
            )
            if not starts:
                break
            position = starts[0]
        else:
            return True
    return False


_FRACTION = re.compile(r"(?<![\w./:-])(\d+(?:\.\d+)?)/(\d+(?:\.\d+)?)(?![\w./:-])")


def _written(number: str, text: str) -> bool:
    return re.search(rf"(?<![\d.]){re.escape(number)}(?![\d.])", text) is not None


def check_fractions(normal: str, evidence: Evidence) -> list[Result]:
    """``50/50`` is one fact (50 of 50).

    Where the item writes fractions, the claim's must be one of them (``50/00``
    is not ``active=50/50, idle=0``); where it writes none, both numbers must be
    in it ("1 available replicas of 9 desired" for ``1/9``).
    """
    results: list[Result] = []
    if "/" not in normal:  # a fraction is written with one
        return results
    writes_fractions = _FRACTION.search(evidence.search) is not None
    for match in _FRACTION.finditer(normal):
        if writes_fractions:
            found = _written(match.group(0).casefold(), evidence.search)
        else:
            found = all(_written(n, evidence.search) for n in match.groups())
        if not found:
            detail = "the item does not write this fraction"
            results.append(Result("fraction", match.group(0), False, False, detail))
    return results
