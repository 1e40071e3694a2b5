"""The typed facts of a cited item.

A claim is checked against what its cited texts state (:mod:`services.verifier.structure`).
Each text is read once into quantities, each with its key (``key=value``), its
role (a bound such as a threshold, or a value), a relation the words give it
("under 26000") and the words around it; the same reading of the words around
a number (:func:`services.verifier.cues.cues_of`) gives a claim's number its role.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache, cached_property, lru_cache

from services.verifier.cues import Clauses, cues_of, has_any
from services.verifier.quantities import (
    PLAIN,
    Lexicon,
    Quantity,
    lexicon,
    normalize,
    read_quantities,
    read_tokens,
)

TOLERANCE = 1e-9
_KEY_BEFORE = re.compile(r"\"?([A-Za-z_][\w.-]*)\"?\s*[=:]\s*\"?$")
LATIN = re.compile(r"[a-z][a-z0-9_]*")


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
    """The typed facts of the cited texts; their numbers are typed when first asked for."""

    search: str
    words: set[str] = field(default_factory=set)
    said: dict[tuple[str, ...], bool] = field(default_factory=dict, repr=False)
    normals: tuple[str, ...] = ()  # the cited texts, normalized
    lex: Lexicon | None = field(default=None, repr=False)

    @cached_property
    def quantities(self) -> list[Typed]:
        """Every number of the cited texts, typed (a claim without numbers needs none)."""
        return _typed_quantities(self.normals, self.lex or default_lexicon())

    def writes(self, norm: str) -> bool:
        """Whether its text writes ``norm`` as whole words: never starting or ending
        inside one of its words or numbers ("= 1" is not written in "= 10452")."""
        if norm not in self.search:
            return False
        bounded = rf"(?<![a-z0-9]){re.escape(norm)}(?![a-z0-9])"
        return re.search(bounded, self.search) is not None

    def says(self, words: tuple[str, ...]) -> bool:
        """Whether its text writes any of ``words`` (:func:`has_any`), asked once per class."""
        known = self.said.get(words)
        if known is None:
            known = self.said[words] = has_any(words, self.search)
        return known

    @cached_property
    def pairs(self) -> dict[str, set[str]]:
        """The values it states per key of its ``key=value`` pairs."""
        stated: dict[str, set[str]] = {}
        for key, value, _ in key_values(self.search):
            stated.setdefault(key, set()).add(value)
        return stated

    @cached_property
    def stems(self) -> frozenset[str]:
        """The stems of its words (read once the typing is done)."""
        return frozenset(word_stem(w) for w in self.words)

    @cached_property
    def joined(self) -> str:
        """Its text without separators: OOM-killed as oomkilled."""
        return SEPARATORS.sub("", self.search)


_PAIR = re.compile(
    r"(?<![\w.-])([a-z_][a-z0-9_]*)=([^\s,;()\"'“”「」\u3000-\u9fff\uff00-\uffef]+)", re.IGNORECASE
)


def key_values(text: str) -> Iterator[tuple[str, str, str]]:
    """The ``key=value`` pairs of ``text`` whose value is no quantity: key, value, as written."""
    if "=" not in text:
        return
    for match in _PAIR.finditer(text):
        value = match.group(2).casefold().rstrip(".:")
        # a quantity (p99=4200ms) is compared by value elsewhere, not as text
        if value and not value[0].isdigit() and value[0] not in "+-.":
            yield match.group(1).casefold(), value, match.group(0)


CONTEXT_WORD = re.compile(r"[a-z][a-z0-9_'-]*")
KEYED_END = re.compile(r"[=:]\s*[\"']?$")
SEPARATORS = re.compile(r"[-_\s]")
_FOLLOWING_WORD = re.compile(r"\W*([a-z][a-z0-9_'-]*)(\s*[=:])?")


def known_terms(lex: Lexicon) -> frozenset[str]:
    """The lexicon's product and technical terms, casefolded."""
    return lex.derived("known_terms", lambda x: frozenset(t.casefold() for t in x.known_terms))


def unit_words(lex: Lexicon) -> frozenset[str]:
    """The lexicon's units and multipliers, casefolded."""
    return lex.derived(
        "unit_words", lambda x: frozenset(u.casefold() for u in (*x.units, *x.multipliers))
    )


def _context_skip(lex: Lexicon) -> frozenset[str]:
    """Words that name nothing: stop words, cue words and units."""
    return lex.derived(
        "context_skip", lambda x: frozenset(x.stop_words) | cue_words(x) | frozenset(x.units)
    )


def context_of(
    text: str,
    q: Quantity,
    quantities: Sequence[Quantity],
    position: int,
    lex: Lexicon,
    *,
    clauses: Clauses | None = None,
) -> frozenset[str]:
    """Up to two content words on each side of a number, within its clause and its
    neighbours: what a claim that restates it in the item's own words shares with it."""
    before, after = (clauses or Clauses(text)).around(q.start, q.end)
    low, high = neighbours(quantities, position)
    if low > q.start - len(before):
        before = text[low : q.start]
    if high >= 0 and high < q.end + len(after):
        after = text[q.end : high]
    skip = _context_skip(lex)
    left = CONTEXT_WORD.findall(before.casefold())[-1:]
    if KEYED_END.search(before):  # "Query_time: 8.7s": the key is the name
        return frozenset(word_stem(w) for w in left if w not in skip)
    following = _FOLLOWING_WORD.match(after.casefold())
    right = [following[1]] if following and not following[2] else []  # not the next key
    return frozenset(word_stem(w) for w in (*left, *right) if w not in skip)


def neighbours(quantities: Sequence[Quantity], index: int) -> tuple[int, int]:
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


# Typed evidence per lexicon (by id, as the patterns and cue words), a few hundred inputs.
TYPED_KEPT = 512
_TYPED: dict[int, dict[tuple[str, ...], Evidence]] = {}


def type_evidence(texts: Sequence[str], lex: Lexicon | None = None) -> Evidence:
    """The typed facts of the cited ref texts and excerpts (the claims of one round cite
    the same items: typed once)."""
    lex = lex or default_lexicon()
    key = tuple(texts)
    typed = _TYPED.setdefault(id(lex), {})
    if key not in typed:
        if len(typed) >= TYPED_KEPT:
            del typed[next(iter(typed))]  # the oldest first
        typed[key] = _type_evidence(key, lex)
    return typed[key]


@cache
def default_lexicon() -> Lexicon:
    """The shipped claim structure, read once."""
    return lexicon()


def _type_evidence(texts: Sequence[str], lex: Lexicon) -> Evidence:
    normals = tuple(normalize(t) for t in texts if t)
    evidence = Evidence(search="\n".join(n.casefold() for n in normals), normals=normals, lex=lex)
    for normal in normals:
        evidence.words.update(LATIN.findall(normal.casefold()))
    return evidence


def _typed_quantities(normals: Sequence[str], lex: Lexicon) -> list[Typed]:
    typed: list[Typed] = []
    for index, normal in enumerate(normals):
        tokens = read_tokens(normal, lex)
        quantities = read_quantities(normal, tokens, lex)
        if not quantities:
            continue
        clauses = Clauses(normal)
        for position, q in enumerate(quantities):
            key = _key_before(normal[max(0, q.start - 40) : q.start])
            cues = cues_of(normal, q, lex, neighbours(quantities, position), clauses=clauses)
            # "alert above 9000", "more than 1s": a number the item compares with is a bound
            bound = _bound_key(key) if key else cues.bound or bool(cues.relation)
            readings = tuple(_key_readings(key, q, lex))
            # a compared figure ("less than 10% space left") is named by its key alone
            context = (
                frozenset({word_stem(key)})
                if key and (bound or cues.relation)
                else frozenset()
                if bound or cues.relation
                else context_of(normal, q, quantities, position, lex, clauses=clauses)
            )
            typed.append(
                Typed(
                    q,
                    readings,
                    bound,
                    cues.relation or _symbol_relation(normal, q),
                    cues.total,
                    False,
                    index,
                    context,
                    key,
                )
            )
    return typed


_BOUND_KEYS = ("threshold", "limit", "max", "desired", "expected", "capacity")


def _bound_key(key: str) -> bool:
    """A key naming a bound: a part of it starts or ends with a bound word (``pool_max``,
    ``maxPoolSize``, ``ratelimit``), never one holding it inside (``gomaxprocs``)."""
    parts = re.split(r"[^a-z0-9]+", key)
    return any(p.startswith(k) or p.endswith(k) for p in parts for k in _BOUND_KEYS)


def _key_before(window: str) -> str:
    """The key a number right after ``window`` is the value of (``current=``), casefolded."""
    tail = window.rstrip()
    if tail.endswith('"'):
        tail = tail[:-1].rstrip()
    if not tail.endswith(("=", ":")):  # what the pattern ends in, past spaces and a quote
        return ""
    # the key and its quotes hold no space: a match starts in the last word before the sign
    head = tail[:-1].rstrip()
    start = len(head) - len(head.rsplit(None, 1)[-1]) if head else 0
    match = _KEY_BEFORE.search(window, start)
    return match[1].casefold() if match else ""


_SYMBOL = re.compile(r"([<>≥≤])=?\s*$")


def _symbol_relation(text: str, q: Quantity) -> str:
    """ "(> 80%)": a comparison sign right before a number is its relation."""
    match = _SYMBOL.search(text, max(0, q.start - 3), q.start)
    return "" if match is None else "gt" if match[1] in ">≥" else "lt"


@lru_cache(maxsize=16384)  # a word at a time: the vocabulary of the tools' output recurs
def word_stem(word: str) -> str:
    for suffix in ("ing", "es", "ed", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


CUE_FIELDS = ("bound_cues", "greater_cues", "less_cues", "approximate_cues", "inference_cues")


def cue_words(lex: Lexicon) -> frozenset[str]:
    """Every word of the cue classes."""
    return lex.derived(
        "cue_words",
        lambda x: frozenset(w for f in CUE_FIELDS for phrase in x.words(f) for w in phrase.split()),
    )
