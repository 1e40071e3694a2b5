"""An alert's current value and threshold as its own words state them.

Why from the annotations: a rule's template usually writes the value into its
summary or description (``CPU usage of web-1 is 93% (threshold 80%)``) and
carries no ``value`` annotation, so an answer that says "current unstated"
contradicts the excerpt it quotes. This module reads those figures back, and
only when the words leave no doubt: a number counts as the value when it
follows a value cue (``is``, ``at``, ``=``, ``:``, ``reached``, ``of``, 为 …)
or the alert's metric words, and as the threshold when it follows a threshold
word (``threshold``, ``limit``, ``above``, ``>``, ``SLO``, 阈值, 超过 …) or
equals the threshold the rule states. Two different candidates for one role,
or none, give ``None``: a guessed figure would be a claim nobody saw.

The figure keeps its text exactly as written, with the parsed number (in the
base unit: bytes, seconds, percent points) and the unit.

Printing them is :mod:`tracebound.alert_printing`. Pure functions only: both the
executor's alert sources and the composer's opening lines use them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

# Annotations that hold no figure of the alert's value or threshold.
SKIPPED_ANNOTATIONS = frozenset(
    {"runbook_url", "runbook", "dashboard", "dashboard_url", "grafana_url", "link", "url"}
)
TEXT_LIMIT = 2000

PERCENT = "percent"
RATIO = "ratio"
BYTES = "bytes"
SECONDS = "seconds"

_SI = {"k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_BYTE_SI = {"B": 1, "KB": 1e3, "kB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "PB": 1e15}
_DURATION = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}

_NUM = r"[+-]?(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)(?:[eE][+-]?\d+)?"
_DUR_PART = r"\d+(?:\.\d+)?(?:ms|[smhdw])"
_FIGURE = re.compile(
    r"(?<![A-Za-z0-9_.:/\-])"
    r"(?:"
    rf"(?P<dur>{_DUR_PART}(?:\s?{_DUR_PART})*)"
    rf"|(?P<num>{_NUM})"
    r"(?P<unit>\s?(?:%|[KMGTPE]iB|[KMGTPE]i|[kKMGTP]B|bytes?|B)|[kKMGTP])?"
    r")"
    r"(?![A-Za-z0-9_/%\-]|[.,:]\d)"
)

_THRESHOLD_WORDS = (
    r"(?:(?<![a-z])(?:thresholds?|limits?|above|over|exceeds?|exceeding|exceeded|greater than"
    r"|more than|higher than|below|under|less than|lower than|slo|target|objectives?)"
    r"|>=?|<=?|≥|≤|阈值|门限|超过|高于|低于|大于|小于|上限|下限|目标)"
)
# What may stand between a cue and its number: ``threshold: 80``, ``above the 90``.
_GLUE = r"(?:\s|[(（:=：,，]|\bis\b|\bof\b|\bat\b|\bthe\b|\ba\b|为|是|的)*"
_THRESHOLD_BEFORE = re.compile(rf"{_THRESHOLD_WORDS}{_GLUE}$", re.IGNORECASE)
_THRESHOLD_AFTER = re.compile(
    r"^\s*(?:\bthreshold\b|\blimit\b|\bslo\b|\btarget\b|\bobjective\b|阈值|上限)", re.IGNORECASE
)
_VALUE_WORDS = (
    r"(?:\bis\b|\bat\b|\bof\b|\breached\b|\breaches\b|\bcurrently\b|\bcurrent\b|\bnow\b"
    r"|\bvalue\b|=|:|：|为|是|达到|当前值|当前|现为)"
)
# Words that name what an alert measures, in any alert (the alert's own words are added).
_GENERIC_METRIC_WORDS = (
    "usage",
    "utilization",
    "utilisation",
    "latency",
    "load",
    "rate",
    "ratio",
    "使用率",
    "利用率",
    "占用率",
    "延迟",
    "错误率",
)
# Words of alert names that say nothing of what is measured.
_NOT_METRIC_WORDS = frozenset(
    {"high", "low", "too", "many", "alert", "is", "total", "sum", "count", "the", "on", "of"}
)
_CONJUNCTION = re.compile(r"^\s*(?:and|or|/|,|，|、|和|或)\s*$", re.IGNORECASE)
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


@dataclass(frozen=True, slots=True)
class Figure:
    """A number as the alert wrote it: its text, its value in the base unit, the unit."""

    text: str
    number: float
    unit: str | None


@dataclass(frozen=True, slots=True)
class AlertFigures:
    value: Figure | None
    threshold: Figure | None


def _float(text: str) -> float:
    return float(text.replace(",", ""))


def parse_figure(text: str) -> Figure | None:
    """``93%``, ``0.931``, ``1.2k``, ``512Mi``, ``1.5 GiB``, ``1.2e+09``, ``3h 12m`` → a figure."""
    stripped = " ".join(text.split())
    match = _FIGURE.fullmatch(stripped)
    return _figure(match) if match else None


def _figure(match: re.Match[str]) -> Figure | None:
    text = match.group(0)
    if match.group("dur"):
        seconds = sum(
            float(n) * _DURATION[u]
            for n, u in re.findall(r"(\d+(?:\.\d+)?)(ms|[smhdw])", match.group("dur"))
        )
        return Figure(text, seconds, SECONDS)
    number = _float(match.group("num"))
    suffix = (match.group("unit") or "").strip()
    scale: float | None
    if suffix in ("", "%") or suffix in _SI:
        scale, unit = _SI.get(suffix, 1.0), PERCENT if suffix == "%" else None
    else:
        scale = 1.0 if suffix in ("byte", "bytes") else None
        scale = scale or _BYTE_SI.get(suffix) or _BINARY.get(suffix.removesuffix("B"))
        unit = BYTES
    if scale is None or not math.isfinite(number * scale):
        return None
    return Figure(text, number * scale, unit)


def metric_words(alert_name: str = "", expr: str | None = None) -> tuple[str, ...]:
    """Lower-case words naming what the alert measures: its name's parts and its metric's."""
    words = [w.lower() for w in _CAMEL.findall(alert_name)]
    if expr:
        for name in re.findall(r"[A-Za-z_:][A-Za-z0-9_:]*", expr):
            words.extend(p.lower() for p in re.split(r"[_:]", name) if p)
    keep = (w for w in words if len(w) > 1 and not w.isdigit() and w not in _NOT_METRIC_WORDS)
    return tuple(dict.fromkeys([*keep, *_GENERIC_METRIC_WORDS]))


def _same(a: Figure, b: Figure) -> bool:
    """One quantity: equal numbers, or a percent and the ratio it is (93.1% and 0.931)."""
    if math.isclose(a.number, b.number, rel_tol=1e-9, abs_tol=1e-12):
        return a.unit == b.unit or None in (a.unit, b.unit)
    pair = {a.unit, b.unit}
    if pair <= {PERCENT, None} and a.unit != b.unit:
        percent, other = (a, b) if a.unit == PERCENT else (b, a)
        return math.isclose(percent.number, other.number * 100, rel_tol=1e-9)
    return False


def _role(before: str, after: str, words: Sequence[str]) -> str | None:
    """``threshold``, ``value`` or None, from the words right before and after a number."""
    window = before[-48:].lower()
    if _THRESHOLD_BEFORE.search(window) or _THRESHOLD_AFTER.search(after[:24]):
        return "threshold"
    cue = "|".join(re.escape(w) for w in words)
    value = rf"(?:{_VALUE_WORDS}|{cue}){_GLUE}$" if cue else rf"{_VALUE_WORDS}{_GLUE}$"
    if re.search(value, window, re.IGNORECASE):
        return "value"
    return None


def _one(found: Iterable[Figure]) -> Figure | None:
    """The one quantity all candidates state (the most explicit text), or None."""
    figures = list(found)
    if not figures:
        return None
    if not all(_same(figures[0], f) for f in figures[1:]):
        return None
    return max(figures, key=lambda f: (f.unit is not None, len(f.text)))


def texts_of(annotations: Mapping[str, str]) -> list[str]:
    """Summary, description, then every other annotation that may state a figure."""
    order = ["summary", "description", *sorted(annotations)]
    keys = [k for k in dict.fromkeys(order) if k in annotations]
    keys = [k for k in keys if k.lower() not in SKIPPED_ANNOTATIONS]
    return [str(annotations[k])[:TEXT_LIMIT] for k in keys if str(annotations[k]).strip()]


def read_figures(
    texts: Sequence[str],
    words: Sequence[str] = (),
    threshold: float | None = None,
) -> AlertFigures:
    """The value and threshold ``texts`` state; ``threshold`` is the rule's, when known."""
    values: list[Figure] = []
    thresholds: list[Figure] = []
    known = Figure("", threshold, None) if threshold is not None else None
    for text in texts:
        previous = 0
        last_role: str | None = None
        for match in _FIGURE.finditer(text):
            figure = _figure(match)
            if figure is None:
                previous = match.end()
                continue
            before, after = text[previous : match.start()], text[match.end() :]
            previous = match.end()
            if known is not None and figure.unit != SECONDS and _same(figure, known):
                thresholds.append(figure)
                last_role = "threshold"
                continue
            role = _role(before, after, words)
            if role is None and last_role and _CONJUNCTION.match(before):
                role = last_role  # "93% and 97%": a second figure of the same role
            last_role = role
            if role == "threshold":
                thresholds.append(figure)
            elif role == "value":
                values.append(figure)
    if any(f.unit != SECONDS for f in [*values, *thresholds]):
        # "5xx ratio over 5m is 34.2% (1h window also above)": a duration beside figures
        # of another unit is a window the alert measures over, never its value or threshold
        values = [f for f in values if f.unit != SECONDS]
        thresholds = [f for f in thresholds if f.unit != SECONDS]
    return AlertFigures(value=_one(values), threshold=_one(thresholds))


def alert_figures(
    annotations: Mapping[str, str],
    alert_name: str = "",
    expr: str | None = None,
    threshold: float | None = None,
) -> AlertFigures:
    """What an alert's annotations state of its value and threshold (None: not stated clearly)."""
    return read_figures(texts_of(annotations), metric_words(alert_name, expr), threshold)


def figures_in(texts: Iterable[str]) -> Iterator[Figure]:
    """Every figure the texts write, in order."""
    for text in texts:
        for match in _FIGURE.finditer(text):
            if (figure := _figure(match)) is not None:
                yield figure


def states_percent(texts: Iterable[str]) -> bool:
    """Whether the alert's words state some figure in percent."""
    return any(f.unit == PERCENT for f in figures_in(texts))
