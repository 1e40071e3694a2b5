"""The alerts a request carries, as the default source of ``query_metrics``.

Why the request is a backend: a run started by Alertmanager already holds the
facts that started it — labels, annotations, ``startsAt``, ``generatorURL`` —
so it can cite them with no external system configured. Each alert becomes a
metrics-envelope item recorded by code, exactly like a Prometheus or demo item.

Values are read, never guessed: the current value, threshold and unit come from
the alert's own annotations or labels under the common names (``value`` /
``current_value``, ``threshold``, ``unit``). What they do not say, the
expression in the alert's own ``generatorURL`` may: its comparison gives the
threshold and its metric's name the unit (the same reading the Prometheus
backend applies to a rule). What neither says, the words of the summary or
description may (``… is 93% (threshold 80%)``, read by
:mod:`tracebound.alert_figures`). Whatever stays unknown is ``None`` in the
item and "unstated" in every text built from it; the summary and description
are kept so a claim can quote the value a rule's template wrote into them.
Durations are measured from ``startsAt`` to the request time, so a replay
gives the same text as the first run.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from services.executor.tools.base import RunContext, ToolBackendError
from services.executor.tools.demo_env import format_duration, iso_utc
from services.executor.tools.prometheus import format_value
from services.executor.tools.promrules import generator_expr, parse_condition, unit_of
from tracebound.alert_printing import stated
from tracebound.events import Alert
from tracebound.events.records import EPOCH
from tracebound.rfc3339 import parse_time

NO_ALERTS = (
    "the request carries no alerts and no metrics backend is configured "
    "(TRACEBOUND_TOOLS_METRICS_BACKEND)"
)
VALUE_KEYS = ("current_value", "value")
THRESHOLD_KEYS = ("threshold",)
UNIT_KEYS = ("unit",)
SERVICE_LABELS = ("service", "app", "job")
TEXT_LIMIT = 500


def _first(keys: tuple[str, ...], *sources: Mapping[str, str]) -> str | None:
    """The first non-blank value under ``keys``, annotations before labels."""
    for source in sources:
        for key in keys:
            value = str(source.get(key) or "").strip()
            if value:
                return value[:TEXT_LIMIT]
    return None


def _state(alert: Alert) -> str:
    return "firing" if alert.status == "firing" else alert.status or "unknown"


def map_request_alert(alert: Alert, requested_at: datetime) -> dict[str, Any]:
    """One Alertmanager alert as a metrics-envelope item."""
    labels = dict(alert.labels)
    notes = dict(alert.annotations)
    started = parse_time(alert.startsAt)
    ended = parse_time(alert.endsAt) if alert.status == "resolved" else None
    until = ended or (requested_at if requested_at > EPOCH else None)
    duration = None
    if started is not None and until is not None and until >= started:
        duration = format_duration((until - started).total_seconds())
    expr = generator_expr(alert.generatorURL)
    condition = parse_condition(expr) if expr else None
    given_threshold = _first(THRESHOLD_KEYS, notes, labels)
    rule_threshold = condition.threshold if condition else None
    unit = _first(UNIT_KEYS, notes, labels)
    if unit is None and condition is not None and condition.lhs:
        unit = unit_of(condition.lhs)
    figures = stated(
        notes,
        value=_first(VALUE_KEYS, notes, labels),
        threshold=given_threshold or format_value(rule_threshold),
        unit=unit,
        alert_name=labels.get("alertname", ""),
        expr=expr,
        rule_threshold=rule_threshold,
    )
    threshold = figures.threshold or (condition.reference if condition else None)
    return {
        "alert_name": labels.get("alertname", ""),
        "service": _first(SERVICE_LABELS, labels),
        "summary": notes.get("summary", "")[:TEXT_LIMIT],
        "description": (notes.get("description") or notes.get("summary") or "")[:TEXT_LIMIT],
        "state": _state(alert),
        "severity": labels.get("severity"),
        "active_at": iso_utc(started) if started else None,
        "duration": duration,
        "current_value": figures.value,
        "threshold": threshold,
        "comparison": None if given_threshold or not condition else condition.comparison,
        "unit": figures.unit,
        "expr": expr,
        "labels": labels,
        "annotations": notes,
        "generatorURL": alert.generatorURL,
        "runbook_url": notes.get("runbook_url", "")[:TEXT_LIMIT] or None,
        "fingerprint": alert.fingerprint,
    }


class RequestAlertSource:
    """``AlertSource`` over ``RunContext.alerts``: the run's own alerts, in request order."""

    layer = "request"

    def fetch_alerts(self, ctx: RunContext) -> list[dict[str, Any]]:
        if not ctx.alerts:
            raise ToolBackendError(NO_ALERTS)
        return [map_request_alert(a, ctx.requested_at) for a in ctx.alerts]
