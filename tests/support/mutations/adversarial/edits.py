"""Edits of a true claim: classes that falsify it, and benign ones that keep it true.

Why an oracle of its own: a "caught" count means something only when every
edited claim is really false. The oracle here shares no code with the
verifier: numbers are read with their own pattern and unit table, and an edit
is kept only when it changes what the claim states (another value at the same
place, a digit of an identifier the evidence does not contain, a unit that
changes the quantity, a negation on a plain statement). Randomness comes only
from ``random.Random(seed)``.

Falsifying classes: ``value_swap`` (a number replaced by another value of the
same excerpt, or two numbers of the claim exchanged), ``identifier_digit`` (a
digit changed inside a path, version, metric name, status code, port, pod
hash, pool name or timestamp), ``unit_edit``, ``negation_en``, ``negation_zh``.
Benign classes: ``synonym`` (an attribute named by another word of the same
meaning), ``reorder`` (fact clauses in another order), ``fullwidth``
(digits and signs written full-width), ``unit_rewrite`` (5.2s for 5200ms,
92 % for 92%, 25 分钟 for 25m).
"""

from __future__ import annotations

import itertools
import random
import re
import unicodedata
from collections.abc import Callable, Iterator

# name -> (dimension, factor to the base unit); the oracle's own table
UNITS: dict[str, tuple[str, float]] = {
    "ms": ("duration", 0.001),
    "毫秒": ("duration", 0.001),
    "s": ("duration", 1.0),
    "seconds": ("duration", 1.0),
    "秒": ("duration", 1.0),
    "m": ("duration", 60.0),
    "min": ("duration", 60.0),
    "minutes": ("duration", 60.0),
    "分钟": ("duration", 60.0),
    "h": ("duration", 3600.0),
    "hours": ("duration", 3600.0),
    "%": ("percent", 1.0),
    " percent": ("percent", 1.0),
    "MB": ("bytes", 1e6),
    "GB": ("bytes", 1e9),
}
_UNIT = "|".join(re.escape(u.strip()) for u in sorted(UNITS, key=len, reverse=True))
NUMBER = re.compile(
    rf"(?<![\w.\-/:])(?P<n>\d+(?:\.\d+)?)(?P<gap> ?)(?P<u>{_UNIT})?(?![\w:\-/]|\.\d|/)"
)
UNIT_EDITS = {
    "%": "ms",
    "ms": "s",
    "s": "ms",
    "seconds": "minutes",
    "m": "h",
    "min": "h",
    "minutes": "seconds",
    "h": "m",
    "MB": "GB",
    "GB": "MB",
    "分钟": "秒",
    "秒": "毫秒",
    "毫秒": "秒",
}
_IDENT = re.compile(r"(?<![\w./:\-])[\w./:\-]*\d[\w./:\-]*")
_CODE = re.compile(r"(?i)(?:\bhttp|\bstatus(?: code)?|\bport|状态码|端口)\s*[=:]?\s*(\d{2,5})\b")
_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(?::\d{2})?Z?")
_QUOTED = re.compile(r"\"[^\"]*\"|「[^」]*」|says: |写道：")

NEGATION_EN: tuple[tuple[str, str], ...] = (
    (r"\b(is|are|was|were|has been|have been)\b(?! (?:not|no|never)\b)", r"\1 not"),
    (r"\bhas an? (?=\w)", "has no "),
    (r"\blogged\b", "did not log"),
    (r"\b(says|reads)\b", "does not say"),
    (r"\bfires\b", "does not fire"),
    (r"\b(time out|cover|advise)\b", r"do not \1"),
    (r"\b(exhausts|runs out|falls back)\b", r"never \1"),
    (r"\brestarted\b", "was not restarted"),
)
NEGATION_ZH: tuple[tuple[str, str], ...] = (
    ("存在", "不存在"),
    ("记录了", "没有记录"),
    ("记录了", "未出现"),
    ("处于", "并未处于"),
    ("写道", "没有写道"),
    ("已持续", "未持续"),
    ("当前值为", "当前值并非"),
)


def norm(text: str) -> str:
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text).casefold()).strip()


def base_value(number: re.Match[str]) -> tuple[str, float]:
    dimension, factor = UNITS.get(number["u"] or "", ("plain", 1.0))
    return dimension, float(number["n"]) * factor


Edit = Callable[[random.Random, str, str], Iterator[str]]


def value_swap(rng: random.Random, text: str, evidence: str) -> Iterator[str]:
    numbers = list(NUMBER.finditer(text))
    pool = list(dict.fromkeys(m["n"] for m in NUMBER.finditer(evidence)))
    for match in numbers:
        others = [v for v in pool if float(v) != float(match["n"])]
        for value in rng.sample(others, k=min(2, len(others))):
            yield text[: match.start("n")] + value + text[match.end("n") :]
    for first, second in itertools.pairwise(numbers):
        if float(first["n"]) != float(second["n"]):
            yield (
                text[: first.start("n")]
                + second["n"]
                + text[first.end("n") : second.start("n")]
                + first["n"]
                + text[second.end("n") :]
            )


def _identifier_spans(text: str) -> Iterator[tuple[int, int]]:
    for match in _IDENT.finditer(text):
        token = match.group().rstrip(".:-")
        if re.search(r"[A-Za-z/_:]", token) and not NUMBER.fullmatch(token):
            yield match.start(), match.start() + len(token)
    for match in _CODE.finditer(text):
        yield match.span(1)
    for match in _TIME.finditer(text):
        yield match.span()


def identifier_digit(rng: random.Random, text: str, evidence: str) -> Iterator[str]:
    folded = norm(evidence)
    for start, end in dict.fromkeys(_identifier_spans(text)):
        token = text[start:end]
        digits = [i for i, c in enumerate(token) if c.isdigit()]
        for i in rng.sample(digits, k=min(2, len(digits))):
            new = token[:i] + str((int(token[i]) + rng.randint(1, 9)) % 10) + token[i + 1 :]
            if norm(new) not in folded:
                yield text[:start] + new + text[end:]


def unit_edit(rng: random.Random, text: str, evidence: str) -> Iterator[str]:
    for match in NUMBER.finditer(text):
        unit = match["u"]
        if unit not in UNIT_EDITS or float(match["n"]) == 0:
            continue
        new = UNIT_EDITS[unit]
        gap = match["gap"] or ("" if new in ("%", "ms", "s", "m", "h") else " ")
        yield text[: match.start("gap")] + gap + new + text[match.end("u") :]


def _insert(rules: tuple[tuple[str, str], ...], text: str) -> Iterator[str]:
    for pattern, replacement in rules:
        edited = re.sub(pattern, replacement, text, count=1)
        if edited != text:
            yield edited


def negation_en(rng: random.Random, text: str, evidence: str) -> Iterator[str]:
    if text.isascii():
        yield from _insert(NEGATION_EN, text)


def negation_zh(rng: random.Random, text: str, evidence: str) -> Iterator[str]:
    if not text.isascii():
        yield from _insert(tuple((re.escape(a), b) for a, b in NEGATION_ZH), text)


# -- benign ---------------------------------------------------------------------


def reorder(rng: random.Random, text: str, evidence: str) -> Iterator[str]:
    """Two fact clauses exchanged, outside any quotation (those before it, when one ends it)."""
    quoted = _QUOTED.search(text)
    if quoted:
        head = text[: quoted.start()]
        cut = max(head.rfind(", "), head.rfind("，"))
        if cut <= 0:
            return
        text, tail = text[:cut], text[cut:]
    else:
        tail = ""
    for separator in (", ", "，"):
        parts = text.rstrip(".。").split(separator)
        ending = text[len(text.rstrip(".。")) :] + tail
        factual = [i for i, p in enumerate(parts) if i > 0 and re.search(r"\d", p)]
        if len(factual) >= 2:
            a, b = rng.sample(factual, k=2)
            parts[a], parts[b] = parts[b], parts[a]
            yield separator.join(parts) + ending


# the same attribute named in other words: (pattern, replacement), one at a time
SYNONYMS: tuple[tuple[str, str], ...] = (
    (r"\bcurrent value\b", "current reading"),
    (r"\bcurrent (?=\d)", "usage at "),
    (r"\bthreshold (?=\d)", "limit "),
    (r"\ba threshold of\b", "a limit of"),
    (r"\bfor (?=\d+ ?m\b)", "lasting "),
    (r"\btook (?=\d)", "took about "),
    (r"\bafter (?=\d+ ?ms\b)", "after waiting "),
    ("当前值为", "使用率为"),
    ("当前值 ", "当前 "),
    ("阈值为", "阈值是"),
    ("阈值 ", "上限 "),
    ("已持续", "持续了"),
)


def synonym(rng: random.Random, text: str, evidence: str) -> Iterator[str]:
    """An attribute named by another word of the same meaning, outside any quotation."""
    if _QUOTED.search(text):
        return
    yield from _insert(SYNONYMS, text)


def fullwidth(rng: random.Random, text: str, evidence: str) -> Iterator[str]:
    wide = "".join(chr(ord(c) + 0xFEE0) if c.isdigit() or c in "%." else c for c in text)
    if wide != text:
        yield wide


def _plain(value: float) -> str:
    """A number without exponent or trailing zeros: 86400000, 1.84."""
    return f"{value:.6f}".rstrip("0").rstrip(".")


def _equivalent(value: float, unit: str, lang: str) -> str | None:
    dimension, factor = UNITS[unit]
    if dimension == "percent":
        return f"{_plain(value)} %" if unit == "%" else f"{_plain(value)}%"
    if dimension == "bytes":
        return f"{_plain(value * factor / 1e6)} MB" if unit == "GB" else None
    seconds = value * factor
    if unit in ("ms", "毫秒"):
        return f"{_plain(seconds)}s" if lang == "en" else f"{_plain(seconds)} 秒"
    if unit in ("m", "min", "minutes", "分钟"):
        return f"{_plain(seconds / 60)} minutes" if lang == "en" else f"{_plain(seconds / 60)} 分钟"
    return f"{_plain(seconds * 1000)}ms"


def unit_rewrite(rng: random.Random, text: str, evidence: str) -> Iterator[str]:
    lang = "en" if text.isascii() else "zh"
    for match in NUMBER.finditer(text):
        if match["u"] is None:
            continue
        new = _equivalent(float(match["n"]), match["u"], lang)
        if new is not None:
            yield text[: match.start()] + new + text[match.end() :]


FALSIFYING: dict[str, Edit] = {
    "value_swap": value_swap,
    "identifier_digit": identifier_digit,
    "unit_edit": unit_edit,
    "negation_en": negation_en,
    "negation_zh": negation_zh,
}
BENIGN: dict[str, Edit] = {
    "synonym": synonym,
    "reorder": reorder,
    "fullwidth": fullwidth,
    "unit_rewrite": unit_rewrite,
}
