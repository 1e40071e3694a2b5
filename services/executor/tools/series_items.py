"""The series of one range query as evidence items, each with its facts computed in code.

Why apart from the tool: the declared queries and the sweep read their series the
same way (:mod:`query_prometheus`, :mod:`promql_sweep`); only what a series is
called, its unit and which series are kept differ (:class:`Reading`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from services.executor.tools.series_facts import clock, series_facts
from services.executor.tools.series_text import item_facts

# a call's window: start, end and the step in seconds
Span = tuple[datetime, datetime, int]
# a range query: PromQL, start, end and step to the result's series
RangeQuery = Callable[[str, datetime, datetime, int], list[Any]]

MAX_SERIES_PER_QUERY = 6


@dataclass(frozen=True, slots=True)
class Reading:
    """How the series of one query are read: named, in a unit, with its facts' options."""

    what: str
    qid: str
    unit: str
    least: float = 0.25
    trend: bool = False
    empties: bool = False


def series_items(
    reading: Reading,
    found: list[Any],
    span: Span,
    onset: datetime | None,
    window_min: int,
    *,
    keep: Callable[[dict[str, Any]], bool] = lambda _item: True,
) -> list[dict[str, Any]]:
    """Each returned series ``keep`` keeps as an item with its facts, most interesting first."""
    start, end, step = span
    out = []
    for series in found:
        metric = series.get("metric") if isinstance(series.get("metric"), dict) else {}
        points = []
        for pair in series.get("values") or []:
            try:
                points.append((float(pair[0]), float(pair[1])))
            except (TypeError, ValueError, IndexError):
                continue
        facts = series_facts(
            points,
            start=start.timestamp(),
            end=end.timestamp(),
            onset=onset.timestamp() if onset else None,
            step=step,
            least=reading.least,
        )
        if facts is None:
            continue
        shown = item_facts(
            facts, reading.unit, window_min, onset, trend=reading.trend, empties=reading.empties
        )
        shown["last_time"] = clock(max(t for t, _ in points))
        out.append(
            {
                "query": reading.qid,
                "what": reading.what,
                "unit": reading.unit,
                "labels": {
                    str(k): str(v)[:200] for k, v in sorted(metric.items()) if k != "__name__"
                },
                "facts": shown,
            }
        )
    out = [item for item in out if keep(item)]
    out.sort(key=interest, reverse=True)
    return out[:MAX_SERIES_PER_QUERY]


def interest(item: Mapping[str, Any]) -> tuple[int, float]:
    """Series that changed first, then the largest."""
    facts = item["facts"]
    changed = facts["direction"] != "steady" or bool(facts.get("first_seen"))
    return (1 if changed else 0, abs(facts["values"]["last"]))
