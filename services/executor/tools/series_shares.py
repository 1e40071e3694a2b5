"""A usage series' share of its limit at the alert's onset, computed in code.

Why: "995 MiB of 1 GiB (97.2% of the memory limit)" is what an SRE reads first,
and both numbers come from two series of the same call. A query of the
catalogue names its limit query (``of``); when both returned series of the
same group (their common labels agree: the same pod, the same pool), the usage
item gains the limit and the share, written into its ref text like every other
fact, so a claim that states them is checked against them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from services.executor.tools.promql import Catalogue
from services.executor.tools.units import format_quantity


def level_now(item: Mapping[str, Any]) -> float | None:
    """The item's value at the alert's onset, else its last value."""
    raw: Mapping[str, Any] = item["facts"].get("values") or {}
    value = raw.get("at_onset")
    if value is None:
        value = raw.get("last")
    return float(value) if isinstance(value, int | float) else None


def same_group(a: Mapping[str, str], b: Mapping[str, str]) -> bool:
    """Two series of the same pod, pool or group: their common labels agree."""
    return all(a[k] == b[k] for k in a.keys() & b.keys())


def add_shares(items: Sequence[dict[str, Any]], book: Catalogue) -> None:
    """Give each usage item whose query names a limit query that limit and its share."""
    for item in items:
        query = book.queries.get(str(item.get("query")))
        if query is None or not query.of:
            continue
        used = level_now(item)
        limits = [
            (value, other)
            for limit in query.of
            for other in items
            if other.get("query") == limit
            and same_group(item["labels"], other["labels"])
            and (value := level_now(other)) is not None
            and value > 0
        ]
        if used is None or not limits:
            continue
        limit, other = limits[0]
        if not 0 <= used <= limit:
            # above its limit: the two series do not measure the same thing (a sum of
            # JVM pools whose maxima are undefined), so no share is stated
            continue
        item["facts"]["limit"] = format_quantity(limit, str(other["unit"]))
        item["facts"]["limit_what"] = str(other["what"])
        item["facts"]["share"] = format_quantity(used / limit, "ratio")
