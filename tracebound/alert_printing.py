"""How an alert's value and threshold print: a ratio whose alert speaks in percent as a
percent, bytes in binary units, and no number ever in scientific notation.

The figures themselves are read by :mod:`tracebound.alert_figures`; a figure read
from the words keeps its text, a given number prints by :func:`display`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal

from tracebound.alert_figures import (
    BYTES,
    PERCENT,
    RATIO,
    Figure,
    figures_in,
    metric_words,
    parse_figure,
    read_figures,
    states_percent,
    texts_of,
)

_BINARY_NAMES = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")


def plain(number: float, digits: int = 6) -> str:
    """``number`` without float noise and never in scientific notation.

    ``97.0`` → ``97``, ``0.93123456`` → ``0.931235``, ``1.2e9`` → ``1200000000``,
    ``1e-07`` → ``0.0000001``.
    """
    if not math.isfinite(number):
        return str(number)
    if abs(number) >= 10**digits:
        return str(round(number))
    text = f"{number:.{digits}g}"
    if "e" in text or "E" in text:
        text = format(Decimal(text), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def binary_bytes(number: float) -> str:
    """``536870912`` → ``512 MiB``, ``1.5 * 2**30`` → ``1.5 GiB``; one decimal at most."""
    size = abs(number)
    step = 0
    while size >= 1024 and step < len(_BINARY_NAMES) - 1:
        size /= 1024
        step += 1
    if step == 0:
        return f"{plain(number)} B"
    shown = f"{size:.1f}".removesuffix(".0")
    return f"{'-' if number < 0 else ''}{shown} {_BINARY_NAMES[step]}"


def display(raw: str | float | None, unit: str | None, percent_text: bool = False) -> str | None:
    """A value of ``unit`` as a person reads it; text that is not a plain number stays as is.

    ``bytes`` print in binary units, a ``ratio`` prints as a percent when the
    alert's own words speak in percent (``percent_text``); any other number
    keeps the text it was given, unless that is scientific notation or a float,
    which prints plainly.
    """
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return None
    try:
        number = float(raw)
    except (TypeError, ValueError):
        number = math.nan
    if not math.isfinite(number):
        return str(raw)
    if unit == BYTES:
        return binary_bytes(number)
    if unit == RATIO and percent_text:
        return f"{plain(number * 100, 4)}%"
    if isinstance(raw, str) and "e" not in raw.lower():
        return raw.strip()  # a number as the alert wrote it keeps its text
    return plain(number)


def display_unit(unit: str | None, percent_text: bool) -> str | None:
    """The unit left to print after :func:`display` (None when the text already carries it)."""
    if unit == BYTES or (unit == RATIO and percent_text):
        return None
    return unit


@dataclass(frozen=True, slots=True)
class Stated:
    """An alert item's value, threshold and unit as they are to be printed."""

    value: str | None
    threshold: str | None
    unit: str | None


def stated(
    annotations: Mapping[str, str],
    *,
    value: str | float | None,
    threshold: str | float | None,
    unit: str | None,
    alert_name: str = "",
    expr: str | None = None,
    rule_threshold: float | None = None,
) -> Stated:
    """The figures an alert item states: those given, else those its annotations state.

    ``value`` and ``threshold`` are what an annotation, a label, the rule or a
    live query gave (None: nothing did); the annotations' words fill the gaps.
    Given numbers print by :func:`display`; figures read from the words keep
    their text.
    """
    texts = texts_of(annotations)
    percent_text = states_percent(texts)
    read = read_figures(texts, metric_words(alert_name, expr), rule_threshold)
    if unit == PERCENT and any(
        _a_fraction(given, words)
        for given, words in ((value, read.value), (threshold, read.threshold))
    ):
        unit = RATIO
    given_threshold = display(threshold, unit, percent_text)
    shown_value = _given_or_read(display(value, unit, percent_text), read.value, unit)
    shown_threshold = _given_or_read(given_threshold, read.threshold, unit)
    bare = parse_figure(shown_value or "")
    if unit is None and given_threshold and bare is not None and bare.unit is None:
        scale = _bare_scale(bare.number, given_threshold, shown_threshold, read.threshold, texts)
        if scale == "percent":
            shown_value = f"{shown_value}%"
        elif scale == "fraction":
            words = _percent_of(bare.number, texts)
            shown_value = words.text if words else f"{plain(bare.number * 100, 4)}%"
            limit = parse_figure(given_threshold)
            if shown_threshold == given_threshold and limit is not None and limit.unit is None:
                shown_threshold = f"{plain(limit.number * 100, 4)}%"
    return Stated(shown_value, shown_threshold, display_unit(unit, percent_text))


def _bare_scale(
    value: float, given: str, shown: str | None, words: Figure | None, texts: Iterable[str]
) -> str:
    """How a bare value and its bare threshold ``given`` are meant, when the words say.

    The rule compares them as they are, so they share one scale: "percent" when the
    words give the threshold a percent sign (80 as "80%"); "fraction" (of 1) when they
    state the threshold as a percent (0.1 as "10%") or the value as one (0.038471 as
    "3.847% space left"); "" when the words say neither.
    """
    if shown == f"{given}%":
        return "percent"
    if shown != given and _a_fraction(given, words):
        return "fraction"
    if shown == given and _percent_of(value, texts):
        return "fraction"
    return ""


def _percent_of(number: float, texts: Iterable[str]) -> Figure | None:
    """The percent figure of ``texts`` that states the fraction ``number`` (0 never)."""
    if number == 0:
        return None
    return next((f for f in figures_in(texts) if _as_percent(number, f)), None)


def _a_fraction(given: str | float | None, words: Figure | None) -> bool:
    """Whether the words state ``given`` (of a ``_percent`` metric) 100 times larger: the
    metric is a fraction of 1, as Micrometer's ``jvm_gc_overhead_percent`` (0.38 is 38 %)."""
    try:
        number = float(given) if given is not None else math.nan
    except (TypeError, ValueError):
        return False
    return math.isfinite(number) and number != 0 and _as_percent(number, words)


def _as_percent(number: float, words: Figure | None) -> bool:
    """Whether ``words`` state the fraction ``number`` as a percent, rounded (0.0727: 7.27%)."""
    if words is None or words.unit != PERCENT:
        return False
    return math.isclose(number * 100, words.number, rel_tol=0.01, abs_tol=1e-9)


def _given_or_read(given: str | None, read: Figure | None, unit: str | None) -> str | None:
    """The given figure; the words' figure when none is given, or when the words write the
    same bare number with its unit (a rule's ``80`` that the description states as ``80%``)."""
    if given is None:
        return read.text if read is not None else None
    if unit in (None, RATIO) and read is not None and read.unit is not None:
        bare = parse_figure(given)
        if bare is not None and bare.unit is None and bare.number == read.number:
            return read.text
        if bare is not None and bare.unit is None and _as_percent(bare.number, read):
            return read.text
    return given
