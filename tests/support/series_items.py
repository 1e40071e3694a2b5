"""Series items as query_prometheus makes them, from a function of the sample index."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from services.executor.diagnosis import Series, evaluate
from services.executor.tools.promql import catalogue
from services.executor.tools.series_facts import clock, series_facts
from services.executor.tools.series_text import item_facts

END = datetime(2026, 12, 5, 15, 0, tzinfo=UTC).timestamp()
START = END - 7200
STEP = 30
ONSET = END - 60


def points(fn: Callable[[int], float]) -> list[tuple[float, float]]:
    return [(START + i * STEP, fn(i)) for i in range(241)]


def item(
    fn: Callable[[int], float], unit: str, query: str, *, since: int = 0, **labels: str
) -> dict[str, Any]:
    """The item of a series sampled from sample ``since`` (first seen then) to the end."""
    sampled = points(fn)[since:]
    facts = series_facts(sampled, start=START, end=END, onset=ONSET, step=STEP)
    assert facts is not None
    book = catalogue().queries.get(query)
    trend, empties = (book.trend, book.empties) if book else (False, False)
    onset = datetime.fromtimestamp(ONSET, UTC)
    shown = item_facts(facts, unit, 120, onset, trend=trend, empties=empties)
    shown["last_time"] = clock(END)
    return {
        "query": query,
        "what": query.replace("_", " "),
        "unit": unit,
        "labels": labels,
        "facts": shown,
    }


def series_of(items: list[dict[str, Any]]) -> list[Series]:
    return [Series((1, f"$.series[{i}]"), it) for i, it in enumerate(items)]


# a deploy's sample: the onset is sample 238; a rule window starts at sample 88
DEPLOY = 170


def deployed() -> dict[str, Any]:
    """A new version first seen at sample :data:`DEPLOY`."""
    new = item(lambda i: 1, "presence", "versions", version="v2")
    new["facts"]["values"]["first_seen"] = START + DEPLOY * STEP
    return new


def rules_held(items: list[dict[str, Any]]) -> list[str]:
    """The ids of the diagnosis rules that hold on ``items``, best supported first."""
    return [f.rule.id for f in evaluate(series_of(items))]


def swept(name: str, fn: Callable[[int], float], unit: str) -> dict[str, Any]:
    """A swept series: the item of the service's own metric ``name``."""
    it = item(fn, unit, "sweep")
    it["what"] = name
    return it


def free_falling(began: int, level: float, per_sample: float, pvc: str) -> dict[str, Any]:
    """A volume's free share: ``level`` until sample ``began``, then falling."""
    return item(
        lambda i: level if i < began else level - per_sample * (i - began),
        "ratio",
        "volume_free_ratio",
        persistentvolumeclaim=pvc,
    )
