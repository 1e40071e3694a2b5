"""The sweep: the service's own metrics that no catalogue query reads, when they changed.

Why: the catalogue (:mod:`promql`) names the metrics it knows, but a service's
own metrics (a queue's pending count, a runtime's collector, a client's retries)
are named by whoever wrote its exporter. An SRE scrolls the service's dashboard
for whatever jumped. The sweep does the same, bounded: it lists the metric names
of the alert's service (one instant query, scoped like every query), keeps the
names no catalogue query reads whose words say trouble (``rules/prometheus-queries.json``,
``sweep``), reads each as a rate (a counter) or a level (a gauge), and keeps only
the series whose change began near the alert's onset. Each is stated like any
other series, named by its metric.
"""

from __future__ import annotations

import re
import time
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from services.executor.tools.base import ToolBackendError
from services.executor.tools.promql import Catalogue, Sweep
from services.executor.tools.promql_names import selects
from services.executor.tools.series_items import RangeQuery, Reading, Span, interest, series_items

SWEEP_ID = "sweep"
_METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]{0,199}")
_COUNTER_ENDINGS = ("_total", "_count", "_sum")
_UNIT_ENDINGS = (("_bytes", "bytes"), ("_seconds", "seconds"), ("_ratio", "ratio"))


_Known = tuple[Catalogue, frozenset[str], tuple[re.Pattern[str], ...]]
_KNOWN: dict[int, _Known] = {}


def _known(book: Catalogue) -> _Known:
    """The metric names the catalogue's queries select, and the name patterns they match."""
    found = _KNOWN.get(id(book))
    if found is not None and found[0] is book:
        return found
    names: set[str] = set()
    patterns: list[re.Pattern[str]] = []
    for query in book.queries.values():
        chosen = selects(query.promql)
        names.update(chosen.names)
        patterns.extend(chosen.patterns)
    _KNOWN[id(book)] = (book, frozenset(names), tuple(patterns))
    return _KNOWN[id(book)]


def read_by_catalogue(name: str, book: Catalogue) -> bool:
    """Whether a catalogue query already reads metric ``name`` (or its histogram family)."""
    _, names, patterns = _known(book)
    family = re.sub(r"_(bucket|count|sum)$", "", name)
    candidates = {name, family, f"{family}_bucket", f"{family}_count", f"{family}_sum"}
    return bool(candidates & names) or any(p.fullmatch(c) for c in candidates for p in patterns)


def _rank(name: str, sweep: Sweep) -> int | None:
    """The position of the name's most telling word in ``sweep.words``; None if it has none."""
    words = set(name.lower().split("_"))
    found = [i for i, w in enumerate(sweep.words) if w in words]
    return min(found) if found else None


def candidates(names: Iterable[str], book: Catalogue, sweep: Sweep) -> list[str]:
    """The names worth reading, most telling first, at most ``sweep.max_names``."""
    ranked: list[tuple[int, str]] = []
    for name in set(names):
        # a name goes into PromQL: only a valid metric name (the server's answer is untrusted)
        if not _METRIC_NAME.fullmatch(name) or name.endswith(sweep.skip_endings):
            continue
        if read_by_catalogue(name, book):
            continue
        rank = _rank(name, sweep)
        if rank is not None:
            ranked.append((rank, name))
    return [name for _, name in sorted(ranked)[: sweep.max_names]]


def counter(name: str) -> bool:
    return name.endswith(_COUNTER_ENDINGS)


def unit_of(name: str) -> str:
    """A counter reads as a rate (``/s``); a gauge in the unit its name ends with."""
    if counter(name):
        return "bytes/s" if name.endswith("_bytes_total") else "/s"
    return next((unit for ending, unit in _UNIT_ENDINGS if name.endswith(ending)), "count")


@dataclass(frozen=True, slots=True)
class Read:
    """One swept metric: what its claim names, its unit, and how it is read."""

    what: str
    unit: str
    name: str
    how: Literal["rate", "level", "mean"]
    drop: str  # the labels summed away

    def render(self, selector: str) -> str:
        """Its PromQL for the scope ``selector`` (put in directly: a name may hold any word)."""
        rate = f"sum without ({self.drop}) (rate({self.name}{{{selector}}}[5m]))"
        if self.how == "rate":
            return rate
        if self.how == "level":
            return f"max without ({self.drop}) ({self.name}{{{selector}}})"
        count = self.name.removesuffix("_sum") + "_count"
        return f"{rate} / sum without ({self.drop}) (rate({count}{{{selector}}}[5m]))"


def read(name: str, names: Collection[str], sweep: Sweep) -> Read:
    """A counter's rate, a gauge's level, or (the ``_sum`` of a histogram or summary with its
    ``_count``) the mean per event; the scope and scrape labels summed away."""
    drop = ", ".join(sweep.drop_labels)
    family = name.removesuffix("_sum")
    if name.endswith("_sum") and f"{family}_count" in names:
        return Read(f"mean {family}", unit_of(family), name, "mean", drop)
    return Read(name, unit_of(name), name, "rate" if counter(name) else "level", drop)


def near_onset(item: Mapping[str, Any], onset: datetime, sweep: Sweep) -> bool:
    """The series changed (or first appeared) from ``lead_minutes`` before the onset to
    ``grace_minutes`` after it: an anomaly long before or after the alert is not swept in."""
    raw: Mapping[str, Any] = item["facts"].get("values") or {}
    moment = raw.get("change_began") if item["facts"]["direction"] != "steady" else None
    moment = moment if moment is not None else raw.get("first_seen")
    if not isinstance(moment, int | float):
        return False
    at = onset.timestamp()
    return at - sweep.lead_minutes * 60 <= moment <= at + sweep.grace_minutes * 60


@dataclass(frozen=True, slots=True)
class Swept:
    """One call's sweep: its catalogue, range query and window."""

    book: Catalogue
    sweep: Sweep
    run_range: RangeQuery
    span: Span
    onset: datetime
    window_min: int

    def items(
        self, selector: str, names: Collection[str], deadline: float, envelope: dict[str, Any]
    ) -> list[dict[str, Any]]:
        """The candidates' series whose change began near the onset, most telling first.

        A failed query is recorded (``sweep_errors``) and skipped: the other names are
        still read, and the declared queries' evidence stands. No query starts after
        ``deadline`` (``not_run``).
        """
        out: list[dict[str, Any]] = []
        errors: list[str] = []
        for name in candidates(names, self.book, self.sweep):
            if time.monotonic() > deadline:
                envelope["not_run"] = [SWEEP_ID]
                break
            planned = read(name, names, self.sweep)
            query = planned.render(selector)
            try:
                found = self.run_range(query, *self.span)
            except ToolBackendError as exc:
                errors.append(str(exc))
                continue
            envelope["queries"].append({"id": SWEEP_ID, "promql": query, "series": len(found)})
            out += series_items(
                Reading(planned.what, SWEEP_ID, planned.unit),
                found,
                self.span,
                self.onset,
                self.window_min,
                keep=lambda item: near_onset(item, self.onset, self.sweep),
            )
        if errors:
            envelope["sweep_errors"] = errors[:5]
        out.sort(key=interest, reverse=True)
        return out[: self.sweep.max_series]
