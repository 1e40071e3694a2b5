"""Facts of one Prometheus series over a window, computed in code.

Why in code: a claim about a series ("restarts rose from 0 to 4 beginning
15:20") is checked against numbers, so the numbers must be computed once, by
code, from the samples Prometheus returned — never read by a model off a chart.
Each series gets its last, minimum, maximum and mean over the window, its value
at the alert's onset and an hour before, the direction of the change between
those two, and when the change began: the split of the samples where the means
before and after differ most, reported only when that difference is large
against the level before it. A lasting change that began more than an hour
before the onset (a log level switched 70 minutes earlier) is no change between
those two values; its direction is then read across its change point, as long
as that lies past the window's first minutes (a rate's warm-up). A series that
starts or stops inside the window (a new version's ``build_info``, a deleted
pod) says when.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import pairwise

# A change smaller than this share of the level before it is no change.
MIN_RELATIVE_CHANGE = 0.25
# Samples each side of a change point, at least.
MIN_SIDE = 3
HOUR_S = 3600.0
# A change point this close to the window's start may be a rate's warm-up.
WARM_UP_S = 900.0


@dataclass(frozen=True, slots=True)
class SeriesFacts:
    """What one series did in the window; every time is a unix second."""

    first: float
    last: float
    minimum: float
    maximum: float
    mean: float
    at_onset: float | None
    hour_before: float | None
    direction: str  # rose | fell | steady
    change_began: float | None
    first_seen: float | None  # set when the series began inside the window
    last_seen: float | None  # set when the series ended inside the window
    samples: int
    # the typical change per minute over the half hour before the onset (the median
    # step, so a restart's drop in a saw-tooth does not hide the climb); None when
    # that is small against the level
    per_minute: float | None = None


def _value_at(points: Sequence[tuple[float, float]], moment: float, step: float) -> float | None:
    """The last sample at or before ``moment`` (within two steps), else None."""
    best: float | None = None
    for t, v in points:
        if t <= moment + 1e-6:
            best = v if moment - t <= 2 * step + 1e-6 else None
        else:
            break
    return best


def hour_shows(direction: str, hour_before: float | None, at_onset: float | None) -> bool:
    """The last hour before the onset moved the way ``direction`` says.

    When it did not, the change came earlier (its direction was read across its
    change point), and the series is told from its window, not from that hour.
    """
    if hour_before is None or at_onset is None or direction not in ("rose", "fell"):
        return True
    return at_onset > hour_before if direction == "rose" else at_onset < hour_before


def _direction(before: float, after: float, least: float = MIN_RELATIVE_CHANGE) -> str:
    scale = max(abs(before), abs(after) * 0.1, 1e-9)
    if abs(after - before) / scale < least:
        return "steady"
    return "rose" if after > before else "fell"


def change_point(values: Sequence[float], least: float = MIN_RELATIVE_CHANGE) -> int | None:
    """The index where a lasting change begins, or None when there is none.

    The split maximising the difference of the means before and after it,
    weighted by how many samples each side has (a plain two-segment fit); kept
    only when the difference is at least :data:`MIN_RELATIVE_CHANGE` of the
    level before and larger than the noise of either side.
    """
    n = len(values)
    if n < 2 * MIN_SIDE:
        return None
    prefix = [0.0]
    for v in values:
        prefix.append(prefix[-1] + v)
    best_i, best_score = None, 0.0
    for i in range(MIN_SIDE, n - MIN_SIDE + 1):
        left = prefix[i] / i
        right = (prefix[n] - prefix[i]) / (n - i)
        score = abs(right - left) * math.sqrt(i * (n - i) / n)
        if score > best_score:
            best_i, best_score = i, score
    if best_i is None:
        return None
    left_vals, right_vals = values[:best_i], values[best_i:]
    left = sum(left_vals) / len(left_vals)
    right = sum(right_vals) / len(right_vals)
    noise = max(_spread(left_vals), _spread(right_vals))
    if abs(right - left) <= 2 * noise or _direction(left, right, least) == "steady":
        return None
    # A ramp's best split is its middle: move back to where it left the old level.
    head = sorted(values[: max(MIN_SIDE, best_i // 2)])
    base = head[len(head) // 2]
    band = max(3 * _spread(values[: max(MIN_SIDE, best_i // 2)]), abs(right - left) * 0.1)
    i = best_i
    while i > 1 and abs(values[i - 1] - base) > band:
        i -= 1
    return i


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def _spread(values: Sequence[float]) -> float:
    if len(values) < 2:
        return 0.0
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def series_facts(
    points: Sequence[tuple[float, float]],
    *,
    start: float,
    end: float,
    onset: float | None,
    step: float,
    least: float = MIN_RELATIVE_CHANGE,
) -> SeriesFacts | None:
    """The facts of one series' finite samples in ``[start, end]``; None when it has none."""
    pts = sorted((t, v) for t, v in points if math.isfinite(v) and start <= t <= end)
    if not pts:
        return None
    values = [v for _, v in pts]
    at_onset = _value_at(pts, onset, step) if onset is not None else None
    hour_before = _value_at(pts, onset - HOUR_S, step) if onset is not None else None
    if at_onset is not None and hour_before is not None:
        direction = _direction(hour_before, at_onset, least)
    else:
        direction = _direction(values[0], values[-1], least)
    split = change_point(values, least)
    if direction == "steady" and split is not None:
        # a change older than the hour: read across its change point, past the warm-up
        if at_onset is not None and pts[split][0] >= start + WARM_UP_S:
            direction = _direction(_mean(values[:split]), _mean(values[split:]), least)
        else:
            split = None
    return SeriesFacts(
        first=values[0],
        last=values[-1],
        minimum=min(values),
        maximum=max(values),
        mean=sum(values) / len(values),
        at_onset=at_onset,
        hour_before=hour_before,
        direction=direction,
        change_began=pts[split][0] if split is not None else None,
        first_seen=pts[0][0] if pts[0][0] > start + 2 * step else None,
        last_seen=pts[-1][0] if pts[-1][0] < end - 2 * step else None,
        samples=len(pts),
        per_minute=_per_minute(pts, onset) if onset is not None else None,
    )


# How far back the trend per minute reads, and the least it must add up to there.
TREND_S = 1800.0
TREND_SHARE = 0.1


def _per_minute(pts: Sequence[tuple[float, float]], onset: float) -> float | None:
    """The median change per minute in the half hour up to ``onset``, if it is large."""
    recent = [(t, v) for t, v in pts if onset - TREND_S <= t <= onset]
    steps = [(v1 - v0) / (t1 - t0) * 60 for (t0, v0), (t1, v1) in pairwise(recent) if t1 > t0]
    if len(steps) < 5:
        return None
    steps.sort()
    middle = len(steps) // 2
    slope = steps[middle] if len(steps) % 2 else (steps[middle - 1] + steps[middle]) / 2
    level = max(abs(v) for _, v in recent)
    if level == 0 or abs(slope) * TREND_S / 60 < TREND_SHARE * level:
        return None
    return slope


def clock(moment: float) -> str:
    """``2026-12-05T15:20:00Z``: the time format of every evidence text."""
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
