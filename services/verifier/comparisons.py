"""The comparisons a claim draws between its numbers, which must hold.

A claim compares a value with a bound ("7.3%, above the 5% threshold") or a bound
with the value after it ("the 1000-message threshold exceeds the 4210 queued").
Which number is the bound comes from the claim's words and the cited item's roles;
the comparison is then computed on the two numbers in one dimension.
"""

from __future__ import annotations

from itertools import pairwise

from services.verifier.cues import CLAUSE, Cues, has_any
from services.verifier.evidence_types import Result, Typed
from services.verifier.quantities import PLAIN, Lexicon, Quantity

Compared = tuple[Quantity, Cues, list[Typed]]  # a claim number, its cues, the item's matches

# Keys of how long a condition held (an alert's ``for``), never a value compared with a bound.
HELD_KEYS = ("for",)


def comparable(a: Quantity, b: Quantity) -> bool:
    return {d for d, _ in a.readings} & {d for d, _ in b.readings} != set() or PLAIN in (
        a.dimension,
        b.dimension,
    )


def _value_of(q: Quantity, other: Quantity) -> tuple[float, float] | None:
    """The two quantities in one dimension (their base values)."""
    for d, v in q.readings:
        for od, ov in other.readings:
            if d == od:
                return v, ov
    if PLAIN in (q.dimension, other.dimension):
        return q.raw, other.raw
    return None


def _holds(first: Quantity, relation: str, second: Quantity) -> bool | None:
    """Whether ``first`` stands in ``relation`` (gt | lt) to ``second``; None: no common unit."""
    pair = _value_of(first, second)
    if pair is None:
        return None
    return pair[0] > pair[1] if relation == "gt" else pair[0] < pair[1]


def _result(first: Quantity, relation: str, second: Quantity, holds: bool) -> Result:
    word = "above" if relation == "gt" else "below"
    detail = "holds" if holds else "does not hold"
    return Result("relation", f"{first.text} {word} {second.text}", holds, not holds, detail)


def relation_between(normal: str, first: Quantity, second: Quantity, lex: Lexicon) -> str:
    """The relation word between two numbers of one clause (gt | lt), "" for none."""
    between = normal[first.end : second.start].casefold()
    if CLAUSE.search(between):
        return ""
    if has_any(lex.words("greater_cues"), between):
        return "gt"
    return "lt" if has_any(lex.words("less_cues"), between) else ""


def comparisons(normal: str, compared: list[Compared], lex: Lexicon) -> list[Result]:
    """Every comparison of the claim's numbers (in claim order), each a result."""
    return _value_first(compared) + _bound_first(normal, compared, lex)


def _value_first(compared: list[Compared]) -> list[Result]:
    """A bound the claim compares a value with ("above the 80 % threshold"): it must hold."""
    results = []
    for index, (bound, cues, _found) in enumerate(compared):
        if not (cues.bound and cues.relation):
            continue
        # a value: not a bound in the claim's words, or a value of the item ("91.5% of maxmemory")
        values = [
            q
            for q, c, found in compared[:index]
            if (not c.bound or any(not (e.bound or e.total) for e in found))
            and comparable(q, bound)
        ]
        # "p99 3.4s, p50 260ms, above 3s": one of them stands above it
        outcomes = [h for v in values if (h := _holds(v, cues.relation, bound)) is not None]
        if outcomes:
            results.append(_result(values[-1], cues.relation, bound, any(outcomes)))
    return results


def _bound_first(normal: str, compared: list[Compared], lex: Lexicon) -> list[Result]:
    """A bound of the item written first and compared with a value of the item after it,
    in one clause: "the 1000-message threshold exceeds the 4210 messages queued" must hold."""
    results = []
    for (bound, _, bounds), (value, cues, values) in pairwise(compared):
        if not bounds or not values or not all(e.bound for e in bounds):
            continue
        if any(e.key in HELD_KEYS for e in values) or cues.window:
            continue  # "over 0.25s for at least 10 minutes": how long, not a value
        if all(e.bound or e.total for e in values) or not comparable(bound, value):
            continue  # a bound compared with a bound or a total
        relation = relation_between(normal, bound, value, lex)
        holds = _holds(bound, relation, value) if relation else None
        if holds is not None:
            results.append(_result(bound, relation, value, holds))
    return results
