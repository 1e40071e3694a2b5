"""Prometheus as the alert source of ``query_metrics``.

Why three endpoints: ``/api/v1/alerts`` is the server's own view of which
alerting rules are pending or firing, with labels, annotations and
``activeAt``; but real alerts rarely carry their threshold or unit, and their
``value`` is the one of the last evaluation. So, once per tool call, the rule
of each alert is read from ``/api/v1/rules`` (its ``expr``, ``for`` and
annotations give the comparison, the threshold and the unit — see
:mod:`promrules`), and the left-hand side of the comparison is evaluated with
``/api/v1/query``, so the value stated is the live one for the alert's own
series. Nothing is guessed: what neither the alert nor its rule says stays null,
with the reason in ``threshold_note``. Rules are never cached across calls: a
reloaded rule file must show in the next answer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from services.executor.tools.base import RunContext, ToolBackendError
from services.executor.tools.demo_env import format_duration, iso_utc
from services.executor.tools.httpjson import get_json
from services.executor.tools.promrules import Condition, parse_condition, unit_of
from tracebound.alert_printing import plain, stated
from tracebound.events import Alert
from tracebound.events.records import EPOCH
from tracebound.rfc3339 import parse_time

# Bounds of one tool call: alerts mapped, and distinct rule expressions evaluated.
MAX_ALERTS = 200
MAX_QUERIES = 25
MAX_EXPR_CHARS = 4000


def wall_clock() -> datetime:
    return datetime.now(UTC)


def format_value(raw: Any) -> str | None:
    """A sample value without float noise and never in scientific notation.

    ``9.7e+01`` → ``97``, ``1.2e+09`` → ``1200000000``, ``1e-07`` → ``0.0000001``.
    """
    if raw in (None, ""):
        return None
    try:
        number = float(raw)
    except (TypeError, ValueError):
        return str(raw)
    return plain(number)


def request_onset(labels: Mapping[str, str], alerts: Sequence[Alert]) -> datetime | None:
    """The ``startsAt`` of the request's alert with these labels, if the request carries it.

    The answer's opening line says "firing since" the request's ``startsAt``;
    the alert item's ``active_at`` and duration use the same onset. Alertmanager
    may add external labels, so the request's alert may carry more labels than
    Prometheus's; exactly one alert must match.
    """
    matches = [
        a
        for a in alerts
        if a.labels.get("alertname") == labels.get("alertname")
        and all(a.labels.get(k) == v for k, v in labels.items())
    ]
    exact = [a for a in matches if dict(a.labels) == dict(labels)]
    found = exact or matches
    return parse_time(found[0].startsAt) if len(found) == 1 else None


def _strings(raw: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in (raw or {}).items()} if isinstance(raw, Mapping) else {}


def find_rule(rules: list[dict[str, Any]], labels: Mapping[str, str]) -> dict[str, Any] | None:
    """The alerting rule an alert came from: same name, its labels a subset of the alert's.

    Two rules may share a name and labels (one per severity, say); the one whose
    own alert list holds exactly these labels wins.
    """
    candidates = [
        r
        for r in rules
        if r.get("name") == labels.get("alertname")
        # a templated label ("{{ $labels.job }}") is listed unexpanded: it matches any value
        and all(labels.get(k) == v for k, v in _strings(r.get("labels")).items() if "{{" not in v)
    ]
    for rule in candidates:
        if any(_strings(a.get("labels")) == labels for a in rule.get("alerts") or []):
            return rule
    return candidates[0] if candidates else None


def pick_sample(result: Any, labels: Mapping[str, str]) -> str | None:
    """The value of the series whose labels the alert carries (most specific match)."""
    if isinstance(result, list) and len(result) == 2 and not isinstance(result[0], dict):
        return format_value(result[1])  # a scalar result: [time, "value"]
    best: tuple[int, str | None] = (-1, None)
    for sample in result if isinstance(result, list) else []:
        if not isinstance(sample, dict):
            continue
        metric = {k: v for k, v in _strings(sample.get("metric")).items() if k != "__name__"}
        value = sample.get("value")
        if not all(labels.get(k) == v for k, v in metric.items()):
            continue
        if isinstance(value, list) and len(value) == 2 and len(metric) > best[0]:
            best = (len(metric), format_value(value[1]))
    return best[1]


NO_RULE = Condition(None, None, None, "no alerting rule of this name and labels was found")


def rule_expr(rule: Mapping[str, Any] | None) -> str:
    """The rule's PromQL (capped): what the comparison is read from."""
    return str(rule.get("query") or "")[:MAX_EXPR_CHARS] if rule else ""


def map_alert(
    alert: dict[str, Any],
    now: datetime,
    rule: Mapping[str, Any] | None = None,
    live_value: str | None = None,
    onset: datetime | None = None,
) -> dict[str, Any]:
    """One Prometheus alert as a metrics-envelope item, completed from its rule.

    ``onset`` is the request's ``startsAt`` of this alert when the run carries
    it (else Prometheus's ``activeAt``); the duration runs from it to ``now``.
    """
    labels = _strings(alert.get("labels"))
    notes = _strings(alert.get("annotations"))
    rule_labels = _strings(rule.get("labels")) if rule else {}
    rule_notes = _strings(rule.get("annotations")) if rule else {}
    expr = rule_expr(rule)
    condition = parse_condition(expr) if rule else NO_RULE
    active = onset or parse_time(str(alert.get("activeAt") or ""))
    given_threshold = notes.get("threshold") or labels.get("threshold")
    unit = next(
        (m["unit"] for m in (notes, labels, rule_notes, rule_labels) if m.get("unit")),
        unit_of(condition.lhs) if condition.lhs else None,
    )
    figures = stated(
        notes,
        value=notes.get("current_value")
        or notes.get("value")
        or live_value
        or format_value(alert.get("value")),
        threshold=given_threshold or format_value(condition.threshold),
        unit=unit,
        alert_name=labels.get("alertname", ""),
        expr=expr,
        rule_threshold=condition.threshold,
    )
    threshold = figures.threshold or condition.reference
    hold = rule.get("duration") if rule else None
    elapsed = (now - active).total_seconds() if active else -1.0
    return {
        "alert_name": labels.get("alertname", ""),
        "service": labels.get("service") or labels.get("job"),
        "summary": notes.get("summary", ""),
        "description": notes.get("description") or notes.get("summary") or "",
        "state": str(alert.get("state") or ""),
        "severity": labels.get("severity"),
        "active_at": iso_utc(active) if active else None,
        "duration": format_duration(elapsed) if elapsed >= 0 else None,
        "current_value": figures.value,
        "threshold": threshold,
        "threshold_note": None if threshold else condition.note,
        "comparison": None if given_threshold else condition.comparison,
        "unit": figures.unit,
        "for": format_duration(float(hold)) if isinstance(hold, int | float) and hold > 0 else None,
        "expr": expr or None,
        "labels": labels,
        "runbook_url": notes.get("runbook_url") or rule_notes.get("runbook_url") or None,
    }


def alerting_rules(data: Any) -> list[dict[str, Any]]:
    """The alerting rules of a ``/api/v1/rules?type=alert`` answer's ``data``."""
    groups = data.get("groups") if isinstance(data, dict) else None
    if not isinstance(groups, list):
        raise ToolBackendError("prometheus: rules response has no data.groups list")
    return [
        rule
        for group in groups
        if isinstance(group, dict)
        for rule in group.get("rules") or []
        if isinstance(rule, dict) and rule.get("type", "alerting") == "alerting"
    ]


class PrometheusAlertSource:
    """``AlertSource`` reading alerts, their rules and live values from Prometheus."""

    layer = "prometheus"

    def __init__(
        self, url: str, timeout_s: float, now: Callable[[], datetime] = wall_clock
    ) -> None:
        self._url = url.rstrip("/")
        self._timeout_s = timeout_s
        self._now = now

    def _get(self, path: str, params: Mapping[str, str]) -> Any:
        body = get_json("prometheus", f"{self._url}{path}", params, self._timeout_s)
        return body.get("data")

    def _rules(self) -> list[dict[str, Any]]:
        return alerting_rules(self._get("/api/v1/rules", {"type": "alert"}))

    def _evaluate(self, lhs: str) -> Any:
        data = self._get("/api/v1/query", {"query": lhs})
        if not isinstance(data, dict) or "result" not in data:
            raise ToolBackendError("prometheus: query response has no data.result")
        return data["result"]

    def fetch_alerts(self, ctx: RunContext | None = None) -> list[dict[str, Any]]:
        data = self._get("/api/v1/alerts", {})
        raw = data.get("alerts") if isinstance(data, dict) else None
        if not isinstance(raw, list):
            raise ToolBackendError("prometheus: response has no data.alerts list")
        alerts = [a for a in raw if isinstance(a, dict)][:MAX_ALERTS]
        rules = self._rules() if alerts else []
        results: dict[str, Any] = {}  # one evaluation per expression, this call only
        requested = ctx.requested_at if ctx is not None else EPOCH
        now = requested if requested > EPOCH else self._now()
        carried = ctx.alerts if ctx is not None else ()
        items = []
        for alert in alerts:
            labels = _strings(alert.get("labels"))
            rule = find_rule(rules, labels)
            lhs = parse_condition(rule_expr(rule)).lhs if rule else None
            if lhs and lhs not in results and len(results) < MAX_QUERIES:
                results[lhs] = self._evaluate(lhs)
            live = pick_sample(results[lhs], labels) if lhs in results else None
            items.append(map_alert(alert, now, rule, live, request_onset(labels, carried)))
        items.sort(key=lambda a: (a["active_at"] or "", a["alert_name"]))
        return items
