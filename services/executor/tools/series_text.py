"""A series item's facts as evidence prints them, and its ref text.

Why one module: the ref text is what the verifier checks a series claim
against, and the claim (``series_claims.wording``) is worded from the same
facts; both print each quantity with :func:`units.format_quantity`, and both
tell a change that came before the last hour from the window first
(:func:`series_facts.hour_shows`), so a claim states its values in the order
its ref text does.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from services.executor.tools.series_facts import SeriesFacts, clock, hour_shows
from services.executor.tools.units import format_quantity
from tracebound import alert_printing as figures


def labels_text(labels: Mapping[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(labels.items()))


def series_scope(labels: Mapping[str, str]) -> str:
    """The labels a series is of, as its ref text and its claim name them."""
    return labels_text(labels) or "all matching series"


def of_limit(f: Mapping[str, Any]) -> str:
    """`` of 1 GiB (97.2% of the memory limit)`` when the usage's limit is known, else nothing:
    "20 of 20" is how an SRE reads a full pool."""
    if not f.get("share"):
        return ""
    return f" of {f['limit']} ({f['share']} of the {f['limit_what']})"


def hour_told(f: Mapping[str, Any]) -> bool:
    """The last hour before the onset shows the change the facts' direction names."""
    raw: Mapping[str, Any] = f.get("values") or {}
    return hour_shows(str(f.get("direction")), raw.get("hour_before"), raw.get("at_onset"))


def series_text(item: Mapping[str, Any]) -> str:
    """``<what> (<id>) for k=v, …: last …, min …, max …, mean … over 120m; …``."""
    f: Mapping[str, Any] = item["facts"]
    scope = series_scope(item["labels"])
    head = f"{item['what']} ({item['query']}) for {scope}"
    if item["unit"] == "presence":
        parts = [f"present at {f['last_time']}"]
        if f.get("first_seen"):
            parts.append(f"first seen {f['first_seen']}{_before(f, 'seen_before')}")
        if f.get("last_seen"):
            parts.append(f"last seen {f['last_seen']}")
        return f"{head}: " + ", ".join(parts)
    parts = [str(f["direction"])]
    onset = ""
    if f.get("at_onset") is not None:
        onset = f"{f['at_onset']}{of_limit(f)} at the alert's onset {f['onset']}"
        if f.get("hour_before") is not None:
            onset += f", from {f['hour_before']} one hour before{ratio_text(f)}"
    # a change that came before the last hour is told from the window first
    hour_first = hour_told(f)
    if onset and hour_first:
        parts[0] += ", " + onset
    window = (
        f"first {f['first']}, last {f['last']}, min {f['min']}, max {f['max']}, mean {f['mean']} "
        f"({f['window']} window)"
    )
    began = [f"change began {f['change_began']}{_before(f)}"] if f.get("change_began") else []
    trend = [f"{f['trend']} {f['per_minute']} in the last 30m"] if f.get("trend") else []
    if f.get("empty_in"):
        trend.append(f"full in {f['empty_in']} at that rate")
    if hour_first:
        parts += [*trend, *began, window]
    else:
        parts += [window, *began, *([onset] if onset else []), *trend]
    for key, word in (("first_seen", "first seen"), ("last_seen", "last seen")):
        if f.get(key):
            aside = _before(f, "seen_before") if key == "first_seen" else ""
            parts.append(f"{word} {f[key]}{aside}")
    return f"{head}: " + "; ".join(parts)


def ratio_text(f: Mapping[str, Any]) -> str:
    """`` (2.4x)``: the level at the onset over the level an hour before, when stated."""
    return f" ({f['ratio']})" if f.get("ratio") else ""


# A change smaller than this factor (either way) is not stated as a ratio, nor one
# larger than MAX_RATIO: "from 0.667ms to 2.85s" says more than "4276x".
MIN_RATIO = 1.5
MAX_RATIO = 100.0


def change_ratio(facts: SeriesFacts) -> str | None:
    """``2.4x``: how many times the level an hour before the onset it was at the onset.

    Stated only when the last hour shows the change (else the claim tells the
    window, not the hour), both levels are positive, and the factor is at least
    :data:`MIN_RATIO` and at most :data:`MAX_RATIO` either way; ``0.21x`` for a fall.
    """
    before, now = facts.hour_before, facts.at_onset
    if before is None or now is None or before <= 0 or now <= 0:
        return None
    if facts.direction not in ("rose", "fell") or not hour_shows(facts.direction, before, now):
        return None
    factor = now / before
    if 1 / MIN_RATIO < factor < MIN_RATIO or not 1 / MAX_RATIO <= factor <= MAX_RATIO:
        return None
    return f"{figures.plain(factor, 2)}x"


def _before(f: Mapping[str, Any], key: str = "began_before") -> str:
    return f", {f[key]}" if f.get(key) else ""


def minutes_from_onset(moment: float | None, onset: datetime | None) -> str | None:
    """``38 min before the alert's onset`` (or after it): how an SRE places a change."""
    if moment is None or onset is None:
        return None
    minutes = round((onset.timestamp() - moment) / 60)
    side = "before" if minutes >= 0 else "after"
    return f"{abs(minutes)} min {side} the alert's onset"


# The longest time to empty worth stating, in minutes.
MAX_EMPTY_MIN = 24 * 60


def _trend(facts: SeriesFacts, unit: str, trend: bool, empties: bool) -> dict[str, str | None]:
    """``growing 16 MiB/min``; for a level that runs out, when it would reach zero."""
    slope = facts.per_minute
    if slope is None or not trend:
        return {"trend": None, "per_minute": None, "empty_in": None}
    level = facts.at_onset if facts.at_onset is not None else facts.last
    empty_in = None
    if empties and slope < 0 and level > 0 and level / -slope <= MAX_EMPTY_MIN:
        empty_in = f"{max(1, round(level / -slope))} min"
    rate = f"{format_quantity(abs(slope), unit)}/min"
    if unit == "bytes":  # a disk or a heap is read per second and per hour as often
        per_s, per_h = (format_quantity(abs(slope) * k, unit) for k in (1 / 60, 60))
        rate += f" ({per_s}/s, {per_h}/h)"
    return {
        "trend": "growing" if slope > 0 else "shrinking",
        "per_minute": rate,
        "empty_in": empty_in,
    }


def _per_minute_too(text: str | None, value: float | None, unit: str) -> str | None:
    """``0.352/s (21/min)``: an event rate under one a second is read per minute too, as
    an SRE counts full GCs or restarts."""
    if text is None or value is None or unit != "/s" or not 0 < value < 1:
        return text
    minute = value * 60
    return f"{text} ({round(minute) if minute >= 10 else round(minute, 1)}/min)"


def item_facts(
    facts: SeriesFacts,
    unit: str,
    window_min: int,
    onset: datetime | None,
    *,
    trend: bool = False,
    empties: bool = False,
) -> dict[str, Any]:
    def q(value: float | None) -> str | None:
        return None if value is None else format_quantity(value, unit)

    def at(moment: float | None) -> str | None:
        return None if moment is None else clock(moment)

    return {
        "first": q(facts.first),
        "last": q(facts.last),
        "min": q(facts.minimum),
        "max": q(facts.maximum),
        "mean": q(facts.mean),
        "window": f"{window_min}m",
        "onset": at(onset.timestamp()) if onset else None,
        "at_onset": _per_minute_too(q(facts.at_onset), facts.at_onset, unit),
        "hour_before": q(facts.hour_before),
        "ratio": change_ratio(facts),
        "direction": facts.direction,
        "change_began": at(facts.change_began),
        "began_before": minutes_from_onset(facts.change_began, onset),
        "first_seen": at(facts.first_seen),
        "seen_before": minutes_from_onset(facts.first_seen, onset),
        "last_seen": at(facts.last_seen),
        "last_time": None,
        **_trend(facts, unit, trend, empties),
        "values": {
            "first": facts.first,
            "last": facts.last,
            "min": facts.minimum,
            "max": facts.maximum,
            "at_onset": facts.at_onset,
            "hour_before": facts.hour_before,
            "change_began": facts.change_began,
            "first_seen": facts.first_seen,
        },
    }
