"""The words around a number that give it its role: a bound, a relation, an approximation.

The same reading serves a claim's numbers and its evidence's
(:mod:`services.verifier.evidence_types`): within the number's clause and
between the numbers beside it, a few words before and after decide whether it
is a bound ("threshold 85%"), a total ("of 2048M"), a window ("in the last 5
minutes"), compared ("above 80%", "3.1 万个段以内") or approximate ("about 3s").
Each word class is one pattern, compiled once per lexicon.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from functools import cache

from services.verifier.quantities import Lexicon, Quantity

WINDOW_WORDS = 3
WINDOW_CJK = 6
CLAUSE = re.compile(r"[;；。，,\[\]]\s*|\.\s+|\s-\s")
_WORD = re.compile(r"[a-z][a-z'_-]*|[\u4e00-\u9fff]+")
_WORDED = re.compile(r"[a-z0-9_]")
_OPENING = re.compile(r"[(（]")
_HEAD = re.compile(r"[\s-]*([a-z]+)")
_RATIO = re.compile(r"\d\s*[A-Za-z%]*\s*/\s*$")
_OF_TOTAL = re.compile(r"\bof(?:\s+(?:its|the|a|an))?\s*$")


@cache
def cue_pattern(words: tuple[str, ...], prefix: bool = False) -> re.Pattern[str]:
    """Any of ``words``: Latin ones as whole words (or word starts), CJK ones anywhere."""
    latin = sorted((w for w in words if w.isascii()), key=len, reverse=True)
    cjk = sorted((w for w in words if not w.isascii()), key=len, reverse=True)
    tail = "" if prefix else r"(?![a-z0-9_])"
    parts = []
    worded = [w for w in latin if _WORDED.match(w)]
    if worded:
        alternatives = "|".join(re.escape(w) for w in worded)
        parts.append(rf"(?<![a-z0-9_])(?:{alternatives}){tail}")
    if len(worded) < len(latin):  # ", so": a cue that begins with punctuation may follow a digit
        alternatives = "|".join(re.escape(w) for w in latin if w not in worded)
        parts.append(rf"(?:{alternatives}){tail}")
    if cjk:
        parts.append("|".join(re.escape(w) for w in cjk))
    return re.compile("|".join(parts))


def has_any(words: tuple[str, ...], text: str, prefix: bool = False) -> bool:
    return bool(text) and cue_pattern(words, prefix).search(text) is not None


def _found(pattern: re.Pattern[str], text: str) -> bool:
    """``has_any`` with the pattern at hand."""
    return bool(text) and pattern.search(text) is not None


@dataclass(frozen=True, slots=True)
class CuePatterns:
    """The word classes a number's role is read from, each as one pattern."""

    bound: re.Pattern[str]  # as word starts: "threshold", "thresholds"
    bound_verbs: re.Pattern[str]
    total: re.Pattern[str]
    greater: re.Pattern[str]
    less: re.Pattern[str]
    approximate: re.Pattern[str]
    window: re.Pattern[str]
    inclusive: re.Pattern[str]


_CUE_PATTERNS: dict[int, CuePatterns] = {}


def cue_patterns(lex: Lexicon) -> CuePatterns:
    """The cue patterns of ``lex``, compiled once per lexicon."""
    key = id(lex)
    if key not in _CUE_PATTERNS:
        _CUE_PATTERNS[key] = CuePatterns(
            bound=cue_pattern(lex.words("bound_cues"), True),
            bound_verbs=cue_pattern(lex.words("bound_verbs")),
            total=cue_pattern(lex.words("total_cues")),
            greater=cue_pattern(lex.words("greater_cues")),
            less=cue_pattern(lex.words("less_cues")),
            approximate=cue_pattern(lex.words("approximate_cues")),
            window=cue_pattern(lex.words("window_cues")),
            inclusive=cue_pattern(lex.words("inclusive_cues")),
        )
    return _CUE_PATTERNS[key]


def clause_around(text: str, start: int, end: int) -> tuple[str, str]:
    """The text before ``start`` and after ``end`` within their clause."""
    before_start = 0
    for match in CLAUSE.finditer(text, 0, start):
        before_start = match.end()
    after = CLAUSE.search(text, end)
    return text[before_start:start], text[end : after.start() if after else len(text)]


class Clauses:
    """The clause breaks of one text, found once for all the numbers in it."""

    __slots__ = ("_ends", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self._ends = [match.end() for match in CLAUSE.finditer(text)]

    def around(self, start: int, end: int) -> tuple[str, str]:
        """:func:`clause_around` of this text."""
        text = self.text
        if not text[start : start + 1].isdecimal():
            return clause_around(text, start, end)
        # no break holds a digit, so none runs through ``start``: the breaks found up to
        # it are the text's breaks that end by it
        count = bisect_right(self._ends, start)
        before_start = self._ends[count - 1] if count else 0
        after = CLAUSE.search(text, end)
        return text[before_start:start], text[end : after.start() if after else len(text)]


def _last_words(folded: str) -> list[str]:
    """The last words of casefolded text, a CJK run as one by its last characters: as
    many as any cue is read from (``WINDOW_WORDS + 2``)."""
    words = _WORD.findall(folded)[-(WINDOW_WORDS + 2) :]
    return [w if w.isascii() else w[-WINDOW_CJK:] for w in words]


def _first_words(folded: str) -> list[str]:
    """The first two words of casefolded text; a CJK run (by its first characters) ends them."""
    out: list[str] = []
    for match in _WORD.finditer(folded):
        word = match.group()
        if not word.isascii():
            out.append(word[:WINDOW_CJK])
            break
        out.append(word)
        if len(out) >= 2:
            break
    return out


@dataclass(frozen=True, slots=True)
class Cues:
    bound: bool  # named a threshold, limit, maximum, desired count
    relation: str
    approx: bool
    total: bool = False  # the whole a value is part of: "of 2048M", "979M / 1024M"
    window: bool = False  # the window a figure is over: "in the last 5 minutes", "最近 5 分钟"
    inclusive: bool = False  # a relation that holds at the number too: "at least", "不超过"


def cues_of(
    text: str,
    q: Quantity,
    lex: Lexicon,
    neighbours: tuple[int, int] = (0, -1),
    *,
    clauses: Clauses | None = None,
) -> Cues:
    """What the words around a number make of it, within its clause and between the
    numbers beside it (``neighbours``: where the previous one ends, the next one starts).
    ``clauses`` are those of ``text``, when its other numbers are read too."""
    cue = cue_patterns(lex)
    clauses = clauses or Clauses(text)
    before, after = clauses.around(q.start, q.end)
    low, high = neighbours
    if not text[q.end : q.end + 2].lstrip().startswith((")", "）")):
        before = _OPENING.split(before)[-1]  # "max_connections (500)" is named from outside
    previous_in_clause = low > q.start - len(before)
    if previous_in_clause:
        before = text[low : q.start]
        # "an 85% threshold for 15 min": the cue right after a number is that number's
        head = _HEAD.match(before.casefold())
        if head and _found(cue.bound, head[1]):
            before = before[head.end() :]
    after = _OPENING.split(after, 1)[0]  # a parenthesis after a number speaks of the next
    if high >= 0 and high < q.end + len(after):
        after = text[q.end : high]
    folded_before, folded_after = before.casefold(), after.casefold()
    last = _last_words(folded_before)
    first = _first_words(folded_after)
    near_before = " ".join(last[-(WINDOW_WORDS + 1) :])
    near_after = " ".join(first)
    if high >= 0 and q.end + len(after) >= high:  # "90% against target 70%": the cue is 70%'s
        final = [w if w.isascii() else w[-WINDOW_CJK:] for w in _WORD.findall(folded_after)[-1:]]
        if final and _found(cue.bound, final[0]):
            near_after = ""
    ratio = _RATIO.search(text[max(0, q.start - 12) : q.start])
    # "1824M used of 2048M", "1 of 9 desired": the total a value before it is part of
    of_total = previous_in_clause and _OF_TOTAL.search(folded_before)
    bound = (
        _found(cue.bound, near_before)
        or _found(cue.bound, near_after)
        or _found(cue.bound_verbs, folded_before)  # "caps the backlog at 31k"
    )
    total = (
        bool(ratio)  # the denominator of 3782M / 4096M
        or bool(of_total)
        or _found(cue.total, " ".join(last[-2:]))
    )
    tight_before = " ".join(last[-WINDOW_WORDS:])
    # a Chinese relation follows its number, past a measure word: 3.1 万个段以内, 8 天多
    postfix = " ".join(first[:1])[:4] if not after.strip()[:1].isascii() else ""
    # "under the threshold of 3": a bound's relation stands before the words that name it
    related = " ".join(last) if bound else tight_before
    relation = ""
    if _found(cue.greater, related) or _found(cue.greater, postfix):
        relation = "gt"
    elif _found(cue.less, related) or _found(cue.less, postfix):
        relation = "lt"
    approx = _found(cue.approximate, tight_before) or _found(cue.approximate, postfix)
    window = q.dimension == "duration" and _found(cue.window, tight_before)
    inclusive = bool(relation) and (
        _found(cue.inclusive, tight_before) or _found(cue.inclusive, postfix)
    )
    return Cues(bound, relation, approx, total, window, inclusive)
