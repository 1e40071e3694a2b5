"""The checkable facts of a text: numbers with units, identifiers and negations.

Why deterministic extraction: a claim may only say what its verified evidence
says, and the facts that decide that ("92%" not "29%", payment-service not
order-service, "not available" not "available") are exactly the ones fuzzy
similarity hides. Extraction works on NFKC text, so full-width forms ("92％",
"ＧＢ") read like ASCII, and identifiers are masked before numbers are read, so
the "1" of HikariPool-1 or the hash of a pod name is never a number.

Negation cues, their exemptions and scope come from the shared lexicon
(``rules/negation.json``) that the gatekeeper's excerpt matcher reads too.

The same extractor serves the verifier (claims and excerpts) and the composer's
answer guard (answers), so both count facts the same way.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from services.common.negation import Negations
from services.verifier.attributes import Binder, binder
from services.verifier.rules_file import VerifierRules

PLAIN = "plain"
_CJK = "\u4e00-\u9fff"
_TOKEN = re.compile(
    rf"(?P<w>[a-z0-9_]+(?:'[a-z]+)?)|(?P<p>[,.;:!?()\[\]{{}}。、|])|(?P<c>[{_CJK}]+)"
)
_ISO_T = re.compile(r"(\d{4}-\d{2}-\d{2})T(\d{2}:)")
_SPACES = re.compile(r"\s+")
_ISO_Z = re.compile(r"(\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)Z")


@dataclass(frozen=True, slots=True)
class Number:
    """A number as written (``text``), its value as written and in the base unit.

    ``attribute`` is what the text says it measures ("" when it says nothing)
    and ``label`` the words that say so with the number ("current=92%").
    """

    text: str
    raw: float
    value: float
    dimension: str  # plain | duration | percent | bytes
    attribute: str = ""
    label: str = ""


@dataclass(frozen=True, slots=True)
class Identifier:
    kind: str  # time | host | pod | service | error | name
    text: str
    norm: str


@dataclass(frozen=True, slots=True)
class Negation:
    """A negation cue and the words it governs; ``head`` is the first of them."""

    cue: str
    head: str
    scope: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Facts:
    """Everything the checks need from one text."""

    search: str  # NFKC, casefolded, ISO times spaced: what identifiers are searched in
    numbers: tuple[Number, ...]
    identifiers: tuple[Identifier, ...]
    negations: tuple[Negation, ...]
    plain_words: frozenset[str]  # English word stems outside every negation scope
    cjk_plain: str  # CJK runs with every negation cue and head cut out


@dataclass(frozen=True, eq=False)
class _Compiled:
    number: re.Pattern[str]
    units: dict[str, tuple[str, float]]
    identifiers: tuple[tuple[str, re.Pattern[str]], ...]
    negations: Negations
    binder: Binder
    chinese: re.Pattern[str]  # a Chinese exemption (group x) or cue (group c), in lexicon order


@lru_cache(maxsize=8)
def _compiled(rules: VerifierRules) -> _Compiled:
    doc = rules.doc
    units: dict[str, tuple[str, float]] = {
        name: (unit.dimension, unit.factor) for name, unit in doc.units.items()
    }
    alternatives = "|".join(re.escape(u) for u in sorted(units, key=len, reverse=True))
    number = re.compile(
        # "N+1" (a query pattern's name) is a term, not the number 1
        rf"(?<![A-Za-z0-9_.\-])(?<![^A-Za-z0-9_][Nn]\+)(?<!^[Nn]\+)(?P<n>\d+(?:\.\d+)?)"
        rf"(?:\s*(?P<u>{alternatives}))?(?![A-Za-z0-9_])"
    )
    return _Compiled(
        number=number,
        units=units,
        identifiers=tuple((p.kind, re.compile(p.pattern)) for p in doc.identifier_patterns),
        negations=rules.negations,
        binder=binder(rules),
        chinese=_chinese_pattern(rules.negations),
    )


def _chinese_pattern(lexicon: Negations) -> re.Pattern[str]:
    """What :meth:`Negations.chinese_cue` finds, at the first place in a run it finds any."""
    cues = "|".join(re.escape(cue) for cue in lexicon.zh_cues)
    exempt = "|".join(re.escape(e) for e in lexicon.zh_exempt)
    return re.compile(f"(?P<x>{exempt})|(?P<c>{cues})" if exempt else f"(?P<c>{cues})")


def normalize(text: str) -> str:
    """NFKC (full-width to ASCII, "％" to "%") with ISO timestamps written with a space."""
    text = unicodedata.normalize("NFKC", text).replace("’", "'")
    if "T" in text:  # each pattern holds its letter: a text without it is left as it is
        text = _ISO_T.sub(r"\1 \2", text)
    return _ISO_Z.sub(r"\1", text) if "Z" in text else text


@lru_cache(maxsize=16384)  # a word at a time: the vocabulary of the tools' output recurs
def stem(word: str) -> str:
    """A crude English stem, enough to match "exhausted" with "exhausts"."""
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _identifiers(text: str, c: _Compiled) -> tuple[list[Identifier], str]:
    """Identifiers in pattern order, and the text with their spans blanked out."""
    found: list[Identifier] = []
    seen: set[tuple[str, str]] = set()
    spans: list[tuple[int, int]] = []
    for kind, pattern in c.identifiers:
        for match in pattern.finditer(text):
            start, end = match.span()
            if match.group() in c.units:
                continue  # "MiB" looks like a CamelCase name but is a unit
            if kind != "service" and any(s < end and start < e for s, e in spans):
                continue  # services may sit inside pod names; other kinds may not overlap
            spans.append((start, end))
            norm = match.group().casefold()
            if (kind, norm) not in seen:
                seen.add((kind, norm))
                found.append(Identifier(kind, match.group(), norm))
    chars = list(text)
    for start, end in spans:
        chars[start:end] = " " * (end - start)
    return found, "".join(chars)


def _numbers(normal: str, masked: str, c: _Compiled) -> list[Number]:
    """Numbers of the masked text, each bound with the words before it in ``normal``."""
    numbers: list[Number] = []
    floor = 0
    for match in c.number.finditer(masked):
        raw = float(match["n"])
        unit = match["u"]
        dimension, factor = c.units[unit] if unit else (PLAIN, 1.0)
        start, end = match.span()
        text = _SPACES.sub(" ", match.group())
        if numbers and start == floor + 1 and masked[floor] == "/":
            # the whole of a ratio is not a value of its attribute: "active=46/50" is not 50 active
            first = numbers[-1]
            attribute = f"{first.attribute} of" if first.attribute else ""
            label = f"{first.label}/{text}"
        else:
            attribute, named = c.binder.bind(normal, start, floor, dimension)
            label = " ".join(normal[named:end].split())
            if not attribute:
                attribute, named = c.binder.bind_after(normal, end, dimension)
                label = " ".join(normal[start:named].split())
        numbers.append(Number(text, raw, raw * factor, dimension, attribute, label))
        floor = end
    return numbers


def _negations(search: str, c: _Compiled) -> tuple[list[Negation], frozenset[str], str]:
    # one group of each match is set: a word, a punctuation mark or a CJK run
    found = _TOKEN.findall(search)
    tokens = [("w", w) if w else ("p", p) if p else ("c", c) for w, p, c in found]
    token_words = [w for w, _, _ in found]
    lexicon = c.negations
    cues, suffixes = lexicon.en_cues, lexicon.en_suffixes
    negations: list[Negation] = []
    scoped: set[int] = set()
    cjk_parts: list[str] = []
    for index, (group, token) in enumerate(tokens):
        if group == "p":
            continue
        if (
            group == "w"
            and (token in cues or token.endswith(suffixes))
            and lexicon.english_cue(token_words, index)
        ):
            scope = _scope(tokens, index + 1, c)
            scoped.update(i for i, _ in scope)
            scoped.add(index)
            words = tuple(stem(tokens[i][1]) for i, _ in scope)
            negations.append(Negation(token, words[0] if words else "", words))
        elif group == "c":
            cjk_parts.append(_cjk_negations(tokens, index, c, negations))
    unscoped = (
        {w for index, w in enumerate(token_words) if index not in scoped}
        if scoped
        else set(token_words)
    )
    unscoped.discard("")  # the place of a mark or a CJK run
    plain = frozenset(map(stem, unscoped.difference(lexicon.stopwords)))
    return negations, plain, "|".join(cjk_parts)


def _scope(tokens: list[tuple[str, str]], start: int, c: _Compiled) -> list[tuple[int, str]]:
    """Up to ``scope_words`` content words after a cue, stopping at punctuation."""
    scope: list[tuple[int, str]] = []
    for index in range(start, len(tokens)):
        group, token = tokens[index]
        if group != "w" or len(scope) >= c.negations.scope_words:
            break
        if token not in c.negations.stopwords:
            scope.append((index, token))
    return scope


def _cjk_negations(
    tokens: list[tuple[str, str]], index: int, c: _Compiled, out: list[Negation]
) -> str:
    """Record the negations of one CJK run; return the run with cues and heads cut out."""
    run = tokens[index][1]
    kept: list[str] = []
    i = 0
    while i < len(run):
        match = c.chinese.search(run, i)
        if match is None:
            kept.append(run[i:])
            break
        kept.append(run[i : match.start()])
        i = match.start()
        if match["c"] is None:  # an exemption: no cue inside it is read
            kept.append(match.group())
            i = match.end()
            continue
        cue = match["c"]
        head = run[i + len(cue) : i + len(cue) + 2]
        if not head:
            following = tokens[index + 1] if index + 1 < len(tokens) else ("", "")
            head = stem(following[1]) if following[0] == "w" else ""
        out.append(Negation(cue, head, (head,) if head else ()))
        kept.append("|")
        i += len(cue) + (len(head) if head and not head.isascii() else 0)
    return "".join(kept)


@lru_cache(maxsize=4096)
def _extract(text: str, rules: VerifierRules, values: bool) -> Facts:
    c = _compiled(rules)
    normal = normalize(text)
    search = normal.casefold()
    negations, plain, cjk_plain = _negations(search, c)
    numbers: list[Number] = []
    identifiers: list[Identifier] = []
    if values:
        identifiers, masked = _identifiers(normal, c)
        numbers = _numbers(normal, masked, c)
    return Facts(
        search=search,
        numbers=tuple(numbers),
        identifiers=tuple(identifiers),
        negations=tuple(negations),
        plain_words=plain,
        cjk_plain=cjk_plain,
    )


def extract(text: str, rules: VerifierRules, *, values: bool = True) -> Facts:
    """The facts of ``text`` under ``rules``; ``values=False`` reads only its negations
    and words (no numbers or identifiers), what a negation check needs."""
    return _extract(text, rules, values)
