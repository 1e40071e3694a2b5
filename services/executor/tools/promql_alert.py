"""The alert's own expression over the window: the symptom, read as a series.

Why: an SRE's first graph is the alert's own expression. When it began to worsen,
set against what changed before it (a deploy, a rise in traffic), orders cause
and effect, whatever exporter the alert reads: a mesh's latency histogram or a
proxy's queue the catalogue does not name is still the alert's symptom.

The expression is the alerting rule's, read from Prometheus's own rules
(``/api/v1/rules``), never from the request: an alert published to the topic
could carry any PromQL. Only the left-hand side of its comparison is evaluated,
as a range query bounded like every other, and only the series whose labels
agree with the alert's are kept.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from services.executor.tools.base import ToolBackendError
from services.executor.tools.httpjson import get_json
from services.executor.tools.prometheus import alerting_rules, find_rule, rule_expr
from services.executor.tools.promrules import measured, parse_condition, unit_of
from services.executor.tools.series_items import RangeQuery, Reading, Span, series_items
from tracebound.events import Alert

ALERT_ID = "alert"
# an ``@`` modifier pins the expression to one time: over a window it reads as flat
_AT = re.compile(r"@\s*(?:start\(\)|end\(\)|[0-9.])")
MAX_SERIES = 6
# the direction in which the expression moves toward firing
_WORSE = {">": "rose", ">=": "rose", "<": "fell", "<=": "fell"}
# the units a series' facts print in (:mod:`units`); any other reads as a plain number
_UNITS = {"seconds": "seconds", "bytes": "bytes", "ratio": "ratio", "/s": "/s"}
_UNITS |= {"bytes/s": "bytes/s", "seconds/s": "/s"}


@dataclass(frozen=True, slots=True)
class AlertExpression:
    """What one alert's rule compares: its left-hand side, unit and bad direction."""

    alert_name: str
    lhs: str
    unit: str
    worse: str  # "rose" or "fell"

    @property
    def what(self) -> str:
        return f"the expression of alert {self.alert_name}"

    @property
    def names(self) -> str:
        """The expression's metric and function names only: label values, label lists
        and ranges blanked, so a rule reads what is measured, not a pod's name."""
        return " ".join(measured(self.lhs).split())


def expression(rules: Sequence[Mapping[str, Any]], alert: Alert) -> AlertExpression | None:
    """The alert's rule's comparison, when it is one expression against a number."""
    rule = (
        find_rule([dict(r) for r in rules], alert.labels) if alert.labels.get("alertname") else None
    )
    condition = parse_condition(rule_expr(rule)) if rule else None
    if condition is None or not condition.lhs or condition.comparison not in _WORSE:
        return None
    if _AT.search(measured(condition.lhs)):
        return None
    unit = _UNITS.get(unit_of(condition.lhs) or "", "count")
    return AlertExpression(
        alert.labels["alertname"], condition.lhs, unit, _WORSE[condition.comparison]
    )


def agreeing(found: Sequence[Any], labels: Mapping[str, str]) -> list[dict[str, Any]]:
    """The series whose labels the alert carries too, the most specific first."""
    kept = []
    for raw in found:
        metric = raw.get("metric") if isinstance(raw, dict) else None
        if not isinstance(metric, dict):
            continue
        own = {str(k): str(v) for k, v in metric.items() if k != "__name__"}
        if all(labels.get(k) == v for k, v in own.items()):
            kept.append(raw)
    kept.sort(key=lambda r: len(r.get("metric") or {}), reverse=True)
    return kept[:MAX_SERIES]


@dataclass(frozen=True, slots=True)
class Rules:
    """Where the alerting rules are read from: Prometheus's ``/api/v1/rules``."""

    url: str
    timeout_s: float

    def read(self) -> list[dict[str, Any]]:
        body = get_json("prometheus", f"{self.url}/api/v1/rules", {"type": "alert"}, self.timeout_s)
        return alerting_rules(body.get("data"))


def alert_items(
    rules: Rules,
    alert: Alert,
    run_range: RangeQuery,
    window: tuple[Span, datetime | None, int],
    envelope: dict[str, Any],
) -> list[dict[str, Any]]:
    """The alert's expression as items ``worse`` in its bad direction; nothing when
    Prometheus has no such rule, or the rule is not one expression against a number.
    A failed query is recorded (``alert_errors``): the other evidence stands."""
    try:
        read = expression(rules.read(), alert)
        found = run_range(read.lhs, *window[0]) if read else []
    except ToolBackendError as exc:
        envelope["alert_errors"] = [str(exc)]
        return []
    if read is None:
        return []
    span, onset, window_min = window
    kept = agreeing(found, alert.labels)
    envelope["queries"].append({"id": ALERT_ID, "promql": read.lhs, "series": len(kept)})
    items = series_items(Reading(read.what, ALERT_ID, read.unit), kept, span, onset, window_min)
    for item in items:
        item["worse"], item["expr"] = read.worse, read.names
    return items
