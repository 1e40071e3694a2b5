"""A claim's facts checked as structure: every value, name and relation against the cited item.

Why structure and not words: a lexicon that binds a number to its metric by the
words beside it ("lag", "积压", "RPS") cannot keep up with real metric names, and
each word added reopens a swap. Here a claim's number is checked by its *value*
against the typed quantities of the item it cites: read in every form the tools
print (:mod:`services.verifier.quantities`), each with its role in the item (a
bound such as a threshold, limit or desired count, or a value) and any relation
the item states ("under 26000"). Only closed word classes are read: what makes a
number a bound, a comparison or an approximation, what links an inference, what
names an entity (``rules/claim-structure.json``).

The rules, per claim:

- a number must be a value of the cited item, in any of its written forms; a
  number the claim calls a bound must be a bound of the item, and a number it
  states plainly must not be only a bound (a swapped threshold); rounding is
  allowed only where the claim says "about";
- a comparison the claim makes between a value and a bound must hold, and a
  relation it states must not be the opposite of the item's own;
- plain numbers named by nothing keep the item's order (two pids swapped);
- every identifier (a name with digits or separators, a host, a path, a URL, a
  clock time, a quoted string) must be written in the item, and so must a word
  that an entity noun names ("container X", "数据库 X");
- an observation that links its facts by an inference ("because", "so", "说明")
  states more than any item does.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache

from services.verifier.quantities import (
    PLAIN,
    Lexicon,
    Quantity,
    Token,
    lexicon,
    normalize,
    read_quantities,
    read_tokens,
)

TOLERANCE = 1e-9
WINDOW_WORDS = 3
WINDOW_CJK = 6
_CLAUSE = re.compile(r"[;；。，,\[\]]\s*|\.\s+|\s-\s")
_WORD = re.compile(r"[a-z][a-z'_-]*|[\u4e00-\u9fff]+")
_KEY_BEFORE = re.compile(r"\"?([A-Za-z_][\w.-]*)\"?\s*[=:]\s*\"?$")
_LATIN = re.compile(r"[a-z][a-z0-9_]*")


@dataclass(frozen=True, slots=True)
class Typed:
    """A quantity in its text: the key it is the value of, its role, a relation it states."""

    quantity: Quantity
    readings: tuple[tuple[str, float], ...]
    bound: bool
    relation: str  # gt | lt | ""
    total: bool = False
    approx: bool = False
    source: int = 0  # which evidence text it was read from
    context: frozenset[str] = frozenset()  # the content words beside it in its clause
    key: str = ""  # the field it is the value of (current=92% → current), if any

    @property
    def label(self) -> str:
        """How the item writes it: ``current=92%``, or the number alone."""
        return f"{self.key}={self.quantity.text}" if self.key else self.quantity.text


@dataclass(frozen=True, slots=True)
class Result:
    """One fact of the claim: found in the evidence, contradicted by it, or neither."""

    kind: str
    fact: str
    found: bool
    conflict: bool
    detail: str


@dataclass
class Evidence:
    """The typed facts of the cited texts."""

    search: str
    quantities: list[Typed] = field(default_factory=list)
    words: set[str] = field(default_factory=set)


@cache
def _cue_pattern(words: tuple[str, ...], prefix: bool = False) -> re.Pattern[str]:
    """Any of ``words``: Latin ones as whole words (or word starts), CJK ones anywhere."""
    latin = sorted((w for w in words if w.isascii()), key=len, reverse=True)
    cjk = sorted((w for w in words if not w.isascii()), key=len, reverse=True)
    tail = "" if prefix else r"(?![a-z0-9_])"
    parts = []
    if latin:
        alternatives = "|".join(re.escape(w) for w in latin)
        parts.append(rf"(?<![a-z0-9_])(?:{alternatives}){tail}")
    if cjk:
        parts.append("|".join(re.escape(w) for w in cjk))
    return re.compile("|".join(parts))


def _clause(text: str, start: int, end: int) -> tuple[str, str]:
    """The text before ``start`` and after ``end`` within their clause."""
    before_start = 0
    for match in _CLAUSE.finditer(text, 0, start):
        before_start = match.end()
    after = _CLAUSE.search(text, end)
    return text[before_start:start], text[end : after.start() if after else len(text)]


def _last_words(text: str, count: int) -> str:
    """The last ``count`` words of ``text`` (a CJK run counts as one, by its last characters)."""
    words = _WORD.findall(text.casefold())
    out = [w if w.isascii() else w[-WINDOW_CJK:] for w in words[-count:]]
    return " ".join(out)


def _first_words(text: str, count: int) -> str:
    words = _WORD.findall(text.casefold())
    out: list[str] = []
    for word in words:
        if not word.isascii():
            out.append(word[:WINDOW_CJK])
            break
        out.append(word)
        if len(out) >= count:
            break
    return " ".join(out)


def _has(words: tuple[str, ...], text: str, prefix: bool = False) -> bool:
    return bool(text) and _cue_pattern(words, prefix).search(text) is not None


@dataclass(frozen=True, slots=True)
class _Cues:
    bound: bool  # named a threshold, limit, maximum, desired count
    relation: str
    approx: bool
    total: bool = False  # the whole a value is part of: "of 2048M", "979M / 1024M"
    window: bool = False  # the window a figure is over: "in the last 5 minutes", "最近 5 分钟"


def _cues(text: str, q: Quantity, lex: Lexicon, neighbours: tuple[int, int] = (0, -1)) -> _Cues:
    """What the words around a number make of it, within its clause and between the
    numbers beside it (``neighbours``: where the previous one ends, the next one starts)."""
    before, after = _clause(text, q.start, q.end)
    low, high = neighbours
    if not text[q.end : q.end + 2].lstrip().startswith((")", "）")):
        before = re.split(r"[(（]", before)[-1]  # "max_connections (500)" is named from outside
    previous_in_clause = low > q.start - len(before)
    if previous_in_clause:
        before = text[low : q.start]
        # "an 85% threshold for 15 min": the cue right after a number is that number's
        head = re.match(r"[\s-]*([a-z]+)", before.casefold())
        if head and _has(lex.words("bound_cues"), head[1], prefix=True):
            before = before[head.end() :]
    after = re.split(r"[(（]", after)[0]  # a parenthesis after a number speaks of the next
    if high >= 0 and high < q.end + len(after):
        after = text[q.end : high]
    near_before = _last_words(before, WINDOW_WORDS + 1)
    near_after = _first_words(after, 2)
    if high >= 0 and q.end + len(after) >= high:  # "90% against target 70%": the cue is 70%'s
        last = _last_words(after, 1)
        if last and _has(lex.words("bound_cues"), last, prefix=True):
            near_after = ""
    bound_words = lex.words("bound_cues")
    ratio = re.search(r"\d\s*[A-Za-z%]*\s*/\s*$", text[max(0, q.start - 12) : q.start])
    # "1824M used of 2048M", "1 of 9 desired": the total a value before it is part of
    of_total = previous_in_clause and re.search(
        r"\bof(?:\s+(?:its|the|a|an))?\s*$", before.casefold()
    )
    bound = (
        _has(bound_words, near_before, prefix=True)
        or _has(bound_words, near_after, prefix=True)
        or _has(lex.words("bound_verbs"), before.casefold())  # "caps the backlog at 31k"
    )
    total_words = lex.words("total_cues")
    total = (
        bool(ratio)  # the denominator of 3782M / 4096M
        or bool(of_total)
        or _has(total_words, _last_words(before, 2))
    )
    greater, less = lex.words("greater_cues"), lex.words("less_cues")
    tight_before = _last_words(before, WINDOW_WORDS)
    # a Chinese relation follows its number, past a measure word: 3.1 万个段以内, 8 天多
    postfix = _first_words(after, 1)[:4] if not after.strip()[:1].isascii() else ""
    relation = ""
    if _has(greater, tight_before) or _has(greater, postfix):
        relation = "gt"
    elif _has(less, tight_before) or _has(less, postfix):
        relation = "lt"
    approximate = lex.words("approximate_cues")
    approx = _has(approximate, tight_before) or _has(approximate, postfix)
    window = q.dimension == "duration" and _has(lex.words("window_cues"), tight_before)
    return _Cues(bound, relation, approx, total, window)


_CONTEXT_WORD = re.compile(r"[a-z][a-z0-9_'-]*")
_SKIPS: dict[int, frozenset[str]] = {}


def _context_skip(lex: Lexicon) -> frozenset[str]:
    """Words that name nothing: stop words, cue words and units (once per lexicon)."""
    if id(lex) not in _SKIPS:
        _SKIPS[id(lex)] = frozenset(lex.stop_words) | _cue_words(lex) | frozenset(lex.units)
    return _SKIPS[id(lex)]


def _context(
    text: str, q: Quantity, quantities: Sequence[Quantity], position: int, lex: Lexicon
) -> frozenset[str]:
    """Up to two content words on each side of a number, within its clause and its
    neighbours: what a claim that restates it in the item's own words shares with it."""
    before, after = _clause(text, q.start, q.end)
    low, high = _neighbours(quantities, position)
    if low > q.start - len(before):
        before = text[low : q.start]
    if high >= 0 and high < q.end + len(after):
        after = text[q.end : high]
    skip = _context_skip(lex)
    left = _CONTEXT_WORD.findall(before.casefold())[-1:]
    if re.search(r"[=:]\s*[\"']?$", before):  # "Query_time: 8.7s": the key is the name
        return frozenset(word_stem(w) for w in left if w not in skip)
    following = re.match(r"\W*([a-z][a-z0-9_'-]*)(\s*[=:])?", after.casefold())
    right = [following[1]] if following and not following[2] else []  # not the next key
    return frozenset(word_stem(w) for w in (*left, *right) if w not in skip)


def _neighbours(quantities: Sequence[Quantity], index: int) -> tuple[int, int]:
    low = quantities[index - 1].end if index > 0 else 0
    high = quantities[index + 1].start if index + 1 < len(quantities) else -1
    return low, high


def _key_readings(key: str, q: Quantity, lex: Lexicon) -> list[tuple[str, float]]:
    """What a plain evidence number can mean, from its key (``latency_ms``) or its kind."""
    if q.dimension != PLAIN:
        return list(q.readings)
    value = q.readings[0][1]
    readings = list(q.readings)
    for suffix, (dimension, scale) in lex.key_units.items():
        if key.endswith(suffix) and dimension != PLAIN:
            readings.append((dimension, value * scale))
    if key in lex.seconds_keys:
        readings.append(("duration", value))
    readings.append(("rate", value))  # a value without a unit: an alert's RPS, its bytes
    readings.append(("bytes", value))
    if key:  # a field's value: a ratio (0.0512 is 5.12 %) or a unit-less percentage (88.1)
        readings.append(("percent", value * 100))
        if value > 1:
            readings.append(("percent", value))
    return readings


def type_evidence(texts: Sequence[str], lex: Lexicon | None = None) -> Evidence:
    """The typed facts of the cited ref texts and excerpts (the claims of one round cite
    the same items: typed once)."""
    if lex is None:
        return _typed(tuple(texts))
    return _type_evidence(texts, lex)


@lru_cache(maxsize=512)
def _typed(texts: tuple[str, ...]) -> Evidence:
    return _type_evidence(texts, lexicon())


def _type_evidence(texts: Sequence[str], lex: Lexicon) -> Evidence:
    normals = [normalize(t) for t in texts if t]
    evidence = Evidence(search="\n".join(n.casefold() for n in normals))
    bound_keys = ("threshold", "limit", "max", "maximum", "desired", "expected", "capacity")
    for index, normal in enumerate(normals):
        tokens = read_tokens(normal, lex)
        quantities = read_quantities(normal, tokens, lex)
        for position, q in enumerate(quantities):
            key_match = _KEY_BEFORE.search(normal[max(0, q.start - 40) : q.start])
            key = key_match[1].casefold() if key_match else ""
            cues = _cues(normal, q, lex, _neighbours(quantities, position))
            # "alert above 9000", "more than 1s": a number the item compares with is a bound
            bound = any(k in key for k in bound_keys) if key else cues.bound or bool(cues.relation)
            readings = tuple(_key_readings(key, q, lex))
            # a compared figure ("less than 10% space left") is named by its key alone
            context = (
                frozenset({word_stem(key)})
                if key and (bound or cues.relation)
                else frozenset()
                if bound or cues.relation
                else _context(normal, q, quantities, position, lex)
            )
            evidence.quantities.append(
                Typed(q, readings, bound, cues.relation, cues.total, False, index, context, key)
            )
        evidence.words.update(_LATIN.findall(normal.casefold()))
    return evidence


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


def _describe(q: Quantity, cues: _Cues) -> str:
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


def _verbatim(normal: str, q: Quantity, evidence: Evidence) -> bool:
    """Whether ``q`` stands in the item with the same text on both sides of it."""
    start = max(q.start - VERBATIM_CHARS, 0)
    # the words after the number carry its relation: at least a few of them, all the
    # claim has but a closing quote or full stop when it ends there
    least_after = max(min(VERBATIM_CHARS // 3, len(normal) - q.end - 1), 1)
    for end in range(min(q.end + VERBATIM_CHARS, len(normal)), q.end + least_after - 1, -1):
        if (q.start - start) + (end - q.end) < VERBATIM_CHARS:
            return False
        if normal[start:end].casefold() in evidence.search:
            return True
    return False


def check_quantities(
    normal: str, evidence: Evidence, lex: Lexicon, tokens: list[Token]
) -> list[Result]:
    """One result per number of the claim, plus its comparisons and its plain order."""
    results: list[Result] = []
    # a number the claim writes in the item's own words, several words each side, says
    # what the item says there ("failure ratio 0.54 over 200 calls" of a quoted log line)
    claimed = read_quantities(normal, tokens, lex)
    typed: list[tuple[Quantity, _Cues, list[Typed]]] = []
    for position, q in enumerate(claimed):
        if _verbatim(normal, q, evidence):
            continue
        cues = _cues(normal, q, lex, _neighbours(claimed, position))
        context = _context(normal, q, claimed, position, lex)
        found = [e for e in evidence.quantities if matches(q, cues.approx, e)]
        same_place = _same_place(q, context, evidence)
        uncued = not (cues.relation or cues.bound or cues.total or cues.window or cues.approx)
        keyed = re.search(r"[=:]\s*[\"']?$", normal[max(0, q.start - 3) : q.start]) is not None
        if same_place and (uncued or keyed) and not any(e in same_place for e in found):
            # "current 10%" where the item says current=85%: the words that name a value in
            # the item name another value in the claim
            said = ", ".join(dict.fromkeys(e.quantity.text for e in same_place))
            results.append(Result("number", q.text, False, True, f"the item says {said} there"))
            typed.append((q, cues, []))
            continue
        typed.append((q, cues, found))
        results.append(_number_result(q, cues, found, evidence))
    results += _comparisons(typed)
    results += _repeats(typed)
    ordered = _order(typed)
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


def _other_value(q: Quantity, cues: _Cues, evidence: Evidence) -> str | None:
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


def _number_result(  # noqa: PLR0911 - one outcome per role a claim can give a number
    q: Quantity, cues: _Cues, found: list[Typed], evidence: Evidence
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
        return _matched(q, found, "number", True, "stated in the cited item")
    if not cues.total and all(e.bound or e.total for e in found):
        why = "the item states it as a threshold, limit or total, not as a value"
        return _matched(q, found, "number", False, why)
    values = [e for e in found if not (e.bound or e.total)] or found
    return _matched(q, values, "number", True, "a value of the cited item")


def _unmatched(q: Quantity, cues: _Cues, fact: str, evidence: Evidence) -> Result:
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


def _comparable(a: Quantity, b: Quantity) -> bool:
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


def _comparisons(typed: list[tuple[Quantity, _Cues, list[Typed]]]) -> list[Result]:
    """A bound the claim compares a value with ("above the 80 % threshold"): it must hold."""
    results = []
    for index, (bound, cues, _found) in enumerate(typed):
        if not (cues.bound and cues.relation):
            continue
        values = [q for q, c, _ in typed[:index] if not c.bound and _comparable(q, bound)]
        if not values:
            continue
        outcomes = []
        for value in values:  # "p99 3.4s, p50 260ms, above 3s": one of them stands above it
            pair = _value_of(value, bound)
            if pair is not None:
                outcomes.append(pair[0] > pair[1] if cues.relation == "gt" else pair[0] < pair[1])
        if not outcomes:
            continue
        holds = any(outcomes)
        word = "above" if cues.relation == "gt" else "below"
        fact = f"{values[-1].text} {word} {bound.text}"
        detail = "holds" if holds else "does not hold"
        results.append(Result("relation", fact, holds, not holds, detail))
    return results


def _repeats(typed: list[tuple[Quantity, _Cues, list[Typed]]]) -> list[Result]:
    """A value stated more often than the item states it ("3.3 GB / 3.3 GB" where the item
    says 3.3 GB / 4 GB): one of the two is not the item's."""
    results = []
    groups: dict[tuple[tuple[str, float], ...], list[list[Typed]]] = {}
    for q, _cues, found in typed:
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


def _order(typed: list[tuple[Quantity, _Cues, list[Typed]]]) -> Result | None:
    """Numbers of one kind named by nothing (two pids, two durations) keep the item's order."""
    for dimension in {q.dimension for q, _, _ in typed}:
        plain = [
            (q, found)
            for q, c, found in typed
            if q.dimension == dimension and not (c.bound or c.relation or c.total or c.window)
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


def check_tokens(
    tokens: Iterable[Token],
    evidence: Evidence,
    lex: Lexicon,
    aliases: dict[str, tuple[str, ...]] | None = None,
) -> list[Result]:
    """Every identifier of the claim, written in the cited item: as it is, without its
    separators (OOM-killed, OOMKilled), or as a declared alias (HikariCP, HikariPool);
    a product's name may stand where the item names no other."""
    known = {t.casefold() for t in lex.known_terms}
    units = {u.casefold() for u in (*lex.units, *lex.multipliers)}
    joined = re.sub(r"[-_\s]", "", evidence.search)
    results = []
    for token in tokens:
        norm = token.norm
        if token.kind == "quoted":  # its words written in the item; its numbers read apart
            words = [w for w in _LATIN.findall(norm) if w not in units]
            stems = {word_stem(w) for w in evidence.words}
            found = norm in evidence.search or (
                bool(words) and all(w in evidence.words or word_stem(w) in stems for w in words)
            )
        elif token.kind in ("url", "path", "address", "time") or ":" in norm:
            found = norm in evidence.search
        elif token.kind == "name" and token.text.isalpha():  # CamelCase: CrashLoop, ShareLock
            found = norm in evidence.search or norm in known
        else:
            boundary = rf"(?<![a-z0-9]){re.escape(norm)}(?![a-z0-9])"
            found = re.search(boundary, evidence.search) is not None
        if not found and token.kind == "name":
            found = re.sub(r"[-_\s]", "", norm) in joined or any(
                alias in evidence.search for alias in (aliases or {}).get(norm, ())
            )
        detail = "written in the cited item" if found else "not written in the cited item"
        results.append(Result(token.kind, token.text, found, False, detail))
    return results


def check_entities(
    normal: str, tokens: list[Token], evidence: Evidence, lex: Lexicon
) -> list[Result]:
    """A plain word an entity noun names ("container ledger", "数据库 orders") must be written."""
    masked = list(normal.casefold())
    for token in tokens:  # an identifier is checked as one; here it only stops a name
        masked[token.start : token.end] = "#" * (token.end - token.start)
    text = "".join(masked)
    nouns = lex.words("entity_nouns")
    skip = set(lex.stop_words) | {w for w in nouns if w.isascii()}
    named: list[str] = []
    for match in _cue_pattern(nouns).finditer(text):
        following = re.match(r"[ \t]*([a-z][a-z0-9_]*)", text[match.end() :])
        if following and following[1] not in skip:
            named.append(following[1])
        if not match.group().isascii():  # "orders 库": a Latin word right before a Chinese noun
            preceding = re.search(r"([a-z][a-z0-9_]*)[ \t]*(?:的)?[ \t]*$", text[: match.start()])
            if preceding and preceding[1] not in skip:
                named.append(preceding[1])
    known = {t.casefold() for t in lex.known_terms}
    results = []
    for word in dict.fromkeys(named):
        if word in known or _is_english_word(word, evidence, lex):
            continue
        found = word in evidence.words or word_stem(word) in {word_stem(w) for w in evidence.words}
        detail = "written in the cited item" if found else "not written in the cited item"
        results.append(Result("entity", word, found, False, detail))
    return results


def word_stem(word: str) -> str:
    for suffix in ("ing", "es", "ed", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _is_english_word(word: str, evidence: Evidence, lex: Lexicon) -> bool:
    """Words that a noun is followed by without naming anything ("the runbook says")."""
    return word in lex.stop_words or word in _cue_words(lex)


_CUE_WORDS: dict[int, frozenset[str]] = {}


def _cue_words(lex: Lexicon) -> frozenset[str]:
    """Every word of the cue classes (once per lexicon)."""
    if id(lex) not in _CUE_WORDS:
        fields = ("bound_cues", "greater_cues", "less_cues", "approximate_cues", "inference_cues")
        phrases = (w for f in fields for w in lex.words(f))
        _CUE_WORDS[id(lex)] = frozenset(w for phrase in phrases for w in phrase.split())
    return _CUE_WORDS[id(lex)]


def check_inference(normal: str, evidence: Evidence, lex: Lexicon) -> list[Result]:
    """An observation may not link its facts by an inference the item does not state.

    A link is allowed when the item states it too, or when all that follows it in
    the clause is written in the item ("原因是 Allocation Failure": the reason the
    log line gives).
    """
    folded = normal.casefold()
    results = []
    for match in _cue_pattern(lex.words("inference_cues")).finditer(folded):
        cue = match.group()
        if _has((cue,), evidence.search) or _restates(folded[match.end() :], evidence, lex):
            continue
        detail = "an inference or conclusion is not an observation"
        results.append(Result("inference", cue, False, False, detail))
    return results


def _restates(rest: str, evidence: Evidence, lex: Lexicon) -> bool:
    """Whether a clause is nothing but words of the item (no CJK, no other word)."""
    end = _CLAUSE.search(rest)
    clause = rest[: end.start()] if end else rest
    if re.search(r"[\u4e00-\u9fff]", clause):
        return False
    words = [w for w in _LATIN.findall(clause) if w not in lex.stop_words]
    return bool(words) and all(w in evidence.words for w in words)


def check_antonyms(normal: str, evidence: Evidence, lex: Lexicon) -> list[Result]:
    """A state word whose opposite the item states ("succeeded" where it says "failed")."""
    folded = normal.casefold()
    results = []
    for one, other in lex.antonym_pairs:
        for said, opposite in ((one, other), (other, one)):
            claim = _cue_pattern(said).search(folded)
            if claim is None or _has(said, evidence.search) or not _has(opposite, evidence.search):
                continue
            results.append(
                Result("state", claim.group(), False, True, "the item states the opposite")
            )
    return results


_PAIR = re.compile(
    r"(?<![\w.-])([a-z_][a-z0-9_]*)=([^\s,;()\"'“”「」\u3000-\u9fff\uff00-\uffef]+)", re.IGNORECASE
)


def _pairs(text: str) -> Iterable[tuple[str, str, str]]:
    for match in _PAIR.finditer(text):
        value = match.group(2).casefold().rstrip(".:")
        # a quantity (p99=4200ms) is compared by value elsewhere, not as text
        if value and not value[0].isdigit() and value[0] not in "+-.":
            yield match.group(1).casefold(), value, match.group(0)


_FRACTION = re.compile(r"(?<![\w./:-])(\d+(?:\.\d+)?)/(\d+(?:\.\d+)?)(?![\w./:-])")


def _written(number: str, text: str) -> bool:
    return re.search(rf"(?<![\d.]){re.escape(number)}(?![\d.])", text) is not None


def check_fractions(normal: str, evidence: Evidence) -> list[Result]:
    """``50/50`` is one fact (50 of 50).

    Where the item writes fractions, the claim's must be one of them (``50/00``
    is not ``active=50/50, idle=0``); where it writes none, both numbers must be
    in it ("1 available replicas of 9 desired" for ``1/9``).
    """
    results = []
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


def check_pairs(normal: str, evidence: Evidence) -> list[Result]:
    """A ``key=value`` whose key the item states only with other values.

    ``reason=Error`` where the item says ``reason=OOMKilled``: a label or field the
    item names is contradicted, not merely missing.
    """
    stated: dict[str, set[str]] = {}
    for key, value, _ in _pairs(evidence.search):
        stated.setdefault(key, set()).add(value)
    return [
        Result("pair", text, False, True, "the item states this key with another value")
        for key, value, text in _pairs(normal)
        if stated.get(key) and value not in stated[key]
    ]


def negated_words(text: str, lex: Lexicon | None = None) -> frozenset[str]:
    """Stems of the words a negating phrase governs ("warns against restarting" → restart):
    the claim keeps the item's "do not restart" in other words."""
    lex = lex or lexicon()
    folded = normalize(text).casefold()
    heads: set[str] = set()
    for match in _cue_pattern(lex.words("negating_phrases")).finditer(folded):
        following = _CONTEXT_WORD.findall(folded[match.end() : match.end() + 40])[:3]
        heads.update(word_stem(w) for w in following if w not in lex.stop_words)
        heads.update(w for w in re.findall(r"[\u4e00-\u9fff]{2}", folded[match.end() :])[:1])
    return frozenset(heads)


def check_negative(
    text: str,
    evidence_texts: Sequence[str],
    lex: Lexicon | None = None,
    aliases: dict[str, tuple[str, ...]] | None = None,
) -> list[Result]:
    """What a negative observation names (its query's terms, quoted or not) and links."""
    return _checked(text, evidence_texts, lex, aliases, positive=False)


def check_claim(
    text: str,
    evidence_texts: Sequence[str],
    lex: Lexicon | None = None,
    aliases: dict[str, tuple[str, ...]] | None = None,
) -> list[Result]:
    """Every fact of a positive claim against the typed facts of its cited texts."""
    return _checked(text, evidence_texts, lex, aliases, positive=True)


def _checked(
    text: str,
    evidence_texts: Sequence[str],
    lex: Lexicon | None,
    aliases: dict[str, tuple[str, ...]] | None,
    *,
    positive: bool,
) -> list[Result]:
    lex = lex or lexicon()
    evidence = type_evidence(evidence_texts, lex)
    normal = normalize(text)
    tokens = read_tokens(normal, lex)
    values = check_quantities(normal, evidence, lex, tokens) if positive else []
    states = check_antonyms(normal, evidence, lex) if positive else []
    return [
        *values,
        *check_tokens(tokens, evidence, lex, aliases),
        *check_entities(normal, tokens, evidence, lex),
        *check_inference(normal, evidence, lex),
        *check_pairs(normal, evidence),
        *(check_fractions(normal, evidence) if positive else []),
        *states,
    ]
