"""Quantities and identifiers of a text, in every form the tools and models write them.

Why one reader for claims and evidence: a claim is checked by value against the
typed quantities of its evidence, so ``10m36s``, ``636 s``, ``10 分 36 秒`` and
``10 minutes 36 seconds`` must all read as 636 seconds, ``0.0512`` as a ratio
that is 5.12 %, ``2.6 万`` as 26,000, ``3072Mi`` as bytes. Identifiers are read
first and masked, so the digits of an IP address, a port, a clock time, a pod
hash or a version are never numbers. A number keeps where it stands (its span),
the words around it decide its role (:mod:`services.verifier.structure`).
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from tracebound import resources
from tracebound.errors import ConfigError

STRUCTURE_PATH = resources.path("rules", "claim-structure.json")
PLAIN = "plain"


class Lexicon(BaseModel):
    """``rules/claim-structure.json``: units and the closed word classes of the check."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: str
    description: str = ""
    units: dict[str, tuple[str, float]]
    multipliers: dict[str, float]
    binary_multipliers: tuple[str, ...]
    key_units: dict[str, tuple[str, float]]
    seconds_keys: tuple[str, ...]
    bound_cues: dict[str, tuple[str, ...]]
    total_cues: dict[str, tuple[str, ...]]
    bound_verbs: dict[str, tuple[str, ...]]
    negating_phrases: dict[str, tuple[str, ...]]
    greater_cues: dict[str, tuple[str, ...]]
    less_cues: dict[str, tuple[str, ...]]
    approximate_cues: dict[str, tuple[str, ...]]
    inference_cues: dict[str, tuple[str, ...]]
    inclusive_cues: dict[str, tuple[str, ...]] = {}
    hedge_cues: dict[str, tuple[str, ...]] = {}
    window_cues: dict[str, tuple[str, ...]]
    entity_nouns: dict[str, tuple[str, ...]]
    stop_words: tuple[str, ...]
    known_terms: tuple[str, ...] = ()
    antonym_pairs: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = ()

    def words(self, field: str) -> tuple[str, ...]:
        """Every word of a word class, both languages (computed once per class)."""
        key = (id(self), field)
        if key not in _WORDS:
            table: dict[str, tuple[str, ...]] = getattr(self, field)
            _WORDS[key] = tuple(w for words in table.values() for w in words)
        return _WORDS[key]

    def derived(self, name: str, build: Callable[[Lexicon], frozenset[str]]) -> frozenset[str]:
        """A word set built from this lexicon once, by ``name`` (stop and cue words, units)."""
        key = (id(self), name)
        if key not in _DERIVED:
            _DERIVED[key] = build(self)
        return _DERIVED[key]


_WORDS: dict[tuple[int, str], tuple[str, ...]] = {}
_DERIVED: dict[tuple[int, str], frozenset[str]] = {}


@cache
def lexicon(path: Path = STRUCTURE_PATH) -> Lexicon:
    try:
        return Lexicon.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the claim structure: {exc.strerror}") from None
    except (ValueError, ValidationError) as exc:
        raise ConfigError(f"{path}: invalid claim structure: {exc}") from None


@dataclass(frozen=True, slots=True)
class Quantity:
    """A number as written, and every (dimension, value in base unit) it can mean."""

    text: str
    start: int
    end: int
    raw: float
    decimals: int
    unit: str
    readings: tuple[tuple[str, float], ...]

    @property
    def dimension(self) -> str:
        return self.readings[0][0]


@dataclass(frozen=True, slots=True)
class Token:
    """An identifier: a name with digits or separators, a clock time, a path, an address."""

    kind: str
    text: str
    norm: str
    start: int
    end: int


_ISO_T = re.compile(r"(\d{4}-\d{2}-\d{2})T(\d{2}:)")


_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
# Where a Chinese or Japanese character meets a Latin letter or a digit ("为642ms").
_CJK_EDGE = re.compile(rf"(?<=[{_CJK}])(?=[A-Za-z0-9])|(?<=[A-Za-z0-9])(?=[{_CJK}])")


def normalize(text: str) -> str:
    """NFKC (full-width forms to ASCII), curly quotes straightened, ISO ``T`` spaced.

    Chinese is written without spaces ("延迟为642ms，是之前的3倍"); a space is put
    where a CJK character meets a Latin letter or digit, and after a full-width
    comma, so its numbers and names are read as in spaced text.
    """
    wide = not text.isascii()
    # a full-width comma is never a thousands separator: keep the number after it apart
    text = unicodedata.normalize("NFKC", text.replace("，", "， ") if wide else text)
    text = _CJK_EDGE.sub(" ", text.replace("’", "'")) if wide else text
    return _ISO_T.sub(r"\1 \2", text) if "T" in text else text  # the pattern holds a T


_NUMBER = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
# Each kind, its pattern, and the characters it cannot match without (one of them must
# be in the text, or the pattern is not tried). A pattern that would start with a
# lookbehind starts with the character it is about instead: the regex engine skips to
# that character rather than trying the whole pattern at every position.
_IDENTIFIERS: tuple[tuple[str, re.Pattern[str], tuple[str, ...]], ...] = (
    ("url", re.compile(r"[a-z][a-z0-9+.-]*://[^\s\"'<>()\[\]{}，。；]+", re.I), ("://",)),
    ("time", re.compile(r"\d{4}-\d{2}-\d{2}(?: \d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?Z?)?"), ("-",)),
    ("time", re.compile(r"\d{1,2}/[A-Za-z]{3}/\d{4}(?::\d{2}:\d{2}:\d{2})?"), ("/",)),
    ("time", re.compile(r"\d\d{3}/\d{2}/\d{2}"), ("/",)),
    ("time", re.compile(r"\d(?<![\d:]\d)\d?:\d{2}(?::\d{2}(?:\.\d+)?)?(?![\d:])"), (":",)),
    ("address", re.compile(r"\d(?<![\w.]\d)\d{0,2}(?:\.\d{1,3}){3}(?::\d+)?(?!\w|\.\d)"), (".",)),
    ("path", re.compile(r"/(?<![\w/]/)[\w.-]+(?:/[\w.:-]*)*"), ("/",)),
    (
        "quoted",
        re.compile(r"\"([^\"]{1,200})\"|“([^”]{1,200})”|「([^」]{1,200})」"),
        ('"', "“", "「"),
    ),
    (
        "name",
        re.compile(
            r"(?<![\w,.])(?=[A-Za-z0-9_]*[A-Za-z_])[A-Za-z0-9_]+(?:[-._:/@#][A-Za-z0-9_]+)+"
        ),
        tuple("-._:/@#"),
    ),
    # a whole word of letters and digits, or a CamelCase or mixed-case one (HikariCP,
    # OOMKilled, ShareLock, PostgreSQL): both match whole words, so one pass finds either
    (
        "name",
        re.compile(
            r"\b(?:(?=[A-Za-z0-9_]*\d)(?=[A-Za-z0-9_]*[A-Za-z])[A-Za-z0-9_]{2,}\b"
            r"|(?=\w*[a-z])(?=\w*[A-Z]\w*[A-Z]|\w*[a-z][A-Z])[A-Za-z][A-Za-z0-9]+\b)"
        ),
        (),
    ),
)


_PATTERNS: dict[int, tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]] = {}


def _patterns(lex: Lexicon) -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """The unit, compound-duration and duration-part patterns of ``lex``, compiled once."""
    key = id(lex)
    if key not in _PATTERNS:
        _PATTERNS[key] = (
            _make_unit_pattern(lex),
            _make_compound_pattern(lex),
            _make_compound_part(lex),
        )
    return _PATTERNS[key]


def _unit_pattern(lex: Lexicon) -> re.Pattern[str]:
    return _patterns(lex)[0]


def _compound_pattern(lex: Lexicon) -> re.Pattern[str]:
    return _patterns(lex)[1]


def _leading_number(not_after: str) -> str:
    """``_NUMBER`` not right after any of the characters ``not_after``: its first digit is
    matched before that lookbehind, so the regex engine skips from digit to digit."""
    rest = r"\d{0,2}(?:,\d{3})+(?:\.\d+)?|\d*(?:\.\d+)?"
    return rf"\d(?<![{not_after}]\d)(?:{rest})"


def _make_unit_pattern(lex: Lexicon) -> re.Pattern[str]:
    names = sorted(lex.units, key=len, reverse=True)
    multipliers = "".join(re.escape(m) for m in lex.multipliers)
    units = "|".join(re.escape(u) for u in names)
    number = _leading_number(r"\w.,")
    # a number, an optional multiplier (k, M, 万), an optional unit; a Latin unit must end a word
    return re.compile(
        rf"(?P<n>{number})(?:\s?(?P<x>[{multipliers}])(?![A-Za-z]))?"
        rf"(?:(?:\s?|-)(?P<u>{units})(?![A-Za-z]))?"
    )


def _duration_units(lex: Lexicon) -> str:
    durations = sorted(
        (u for u, (dim, _) in lex.units.items() if dim == "duration"), key=len, reverse=True
    )
    return "|".join(re.escape(u) for u in durations)


def _make_compound_pattern(lex: Lexicon) -> re.Pattern[str]:
    unit = rf"\s?(?:{_duration_units(lex)})(?![A-Za-z])"
    part = rf"(?:{_NUMBER}){unit}"
    first = _leading_number(r"\w.") + unit
    return re.compile(rf"{first}(?:(?:\s|\s?and\s|,\s)?{part})+")


def _make_compound_part(lex: Lexicon) -> re.Pattern[str]:
    return re.compile(rf"({_NUMBER})\s?({_duration_units(lex)})")


def _quantity_token(text: str, lex: Lexicon) -> bool:
    """Whether a name-like token (``4.24s``, ``2h05m``, ``3072Mi``, ``1.2k``) is a quantity."""
    if not text[:1].isdecimal():  # both patterns begin with a number
        return False
    if _compound_pattern(lex).fullmatch(text):
        return True
    match = _unit_pattern(lex).fullmatch(text)
    return bool(match and (match["u"] or match["x"]))


def read_tokens(text: str, lex: Lexicon | None = None) -> list[Token]:
    """Identifiers in ``text`` (normalized), earlier kinds first; spans never overlap."""
    lex = lex or lexicon()
    found: list[Token] = []
    taken: list[tuple[int, int]] = []
    for kind, pattern, needs in _IDENTIFIERS:
        if needs and not any(n in text for n in needs):
            continue
        for match in pattern.finditer(text):
            start, end = match.span()
            if taken and any(s < end and start < e for s, e in taken):
                continue
            value = (
                next((g for g in match.groups() if g), match.group())
                if kind == "quoted"
                else (match.group())
            )
            if kind == "name" and (value in lex.units or _quantity_token(value, lex)):
                continue
            value = value.rstrip(".,:;")
            if kind != "quoted":  # a quote's own names and numbers are read as well
                taken.append((start, end))
            found.append(Token(kind, value, " ".join(value.casefold().split()), start, end))
    found.sort(key=lambda t: t.start)
    return found


def _decimals(number: str) -> int:
    return len(number.split(".", 1)[1]) if "." in number else 0


def _compound(text: str, lex: Lexicon) -> float:
    """The seconds of a compound duration (``2h05m``, ``1m 7.2s``, ``3 天 6 小时``)."""
    part = _patterns(lex)[2]
    return sum(float(m[1].replace(",", "")) * lex.units[m[2]][1] for m in part.finditer(text))


def _readings(
    raw: float, multiplier: str | None, unit: str | None, lex: Lexicon
) -> list[tuple[str, float]]:
    factor = lex.multipliers.get(multiplier, 1.0) if multiplier else 1.0
    readings: list[tuple[str, float]] = []
    if unit:
        dimension, scale = lex.units[unit]
        readings.append((dimension, raw * factor * scale))
        if dimension == "bytes" and multiplier is None and unit in ("KB", "MB", "GB", "TB"):
            power = ("KB", "MB", "GB", "TB").index(unit) + 1
            readings.append(("bytes", raw * 1024**power))  # GB is often written for GiB
        return readings
    readings.append((PLAIN, raw * factor))
    if multiplier in lex.binary_multipliers:  # 2048M of memory: Mi as often as M
        power = ("K", "M", "G").index(multiplier) + 1
        readings.append(("bytes", raw * factor))
        readings.append(("bytes", raw * 1024**power))
    return readings


def read_quantities(
    text: str, tokens: list[Token] | None = None, lex: Lexicon | None = None
) -> list[Quantity]:
    """Quantities of ``text`` (normalized) outside its identifiers, in text order."""
    lex = lex or lexicon()
    tokens = read_tokens(text, lex) if tokens is None else tokens
    masked = list(text)
    for token in tokens:
        if token.kind != "quoted":
            masked[token.start : token.end] = " " * (token.end - token.start)
    plain = "".join(masked)
    found: list[Quantity] = []
    taken: list[tuple[int, int]] = []
    for match in _compound_pattern(lex).finditer(plain):
        seconds = _compound(match.group(), lex)
        start, end = match.span()
        taken.append((start, end))
        written = match.group()
        found.append(
            Quantity(
                written, start, end, seconds, _decimals(written), "s", (("duration", seconds),)
            )
        )
    for match in _unit_pattern(lex).finditer(plain):
        start, end = match.span()
        if any(s < end and start < e for s, e in taken):
            continue
        number = match["n"]
        raw = float(number.replace(",", ""))
        readings = _readings(raw, match["x"], match["u"], lex)
        written = match.group().strip()
        found.append(
            Quantity(
                written,
                start,
                end,
                raw,
                _decimals(number),
                match["u"] or match["x"] or "",
                tuple(readings),
            )
        )
    return sorted(found, key=lambda q: q.start)
