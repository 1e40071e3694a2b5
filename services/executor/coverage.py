"""Every firing alert of a request is accounted for: by a claim or in ``missing_info``.

Why a separate pass: the claims of a round come from whatever the tools
returned, capped at the claim budget, so an alert can go unmentioned (a second
firing pod cut by the cap, a metrics backend that does not hold the alert). The
alert that started a run is known to be firing, so it may never be silently
dropped nor declared unseen: after the claims are chosen, each firing alert
without an observation gets a ``missing_info`` line naming it, and a metrics
query that found nothing for a filter matching such an alert is not stated as
"no matching evidence".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tracebound.events import Alert

# Labels that tell two alerts of the same name and service apart.
_TARGET_LABELS = ("pod", "instance")


def firing(alerts: Sequence[Alert]) -> list[Alert]:
    return [a for a in alerts if a.status == "firing"]


def _service(labels: Mapping[str, str]) -> str:
    return labels.get("service") or labels.get("job") or ""


def alert_label(alert: Alert) -> str:
    """``HighCPUUsage (service=checkout-service, pod=…, since 2026-…)`` for a missing line."""
    labels = alert.labels
    parts = [f"{k}={labels[k]}" for k in ("service", *_TARGET_LABELS) if labels.get(k)]
    if alert.startsAt:
        parts.append(f"since {alert.startsAt}")
    name = labels.get("alertname") or "unnamed-alert"
    return f"{name} ({', '.join(parts)})" if parts else name


def item_covers(item: Mapping[str, Any], alert: Alert) -> bool:
    """Whether a metrics item is about ``alert`` (same fingerprint, else same name and target)."""
    fingerprint = str(item.get("fingerprint") or "")
    if fingerprint and alert.fingerprint:
        return fingerprint == alert.fingerprint
    if item.get("alert_name") != alert.labels.get("alertname"):
        return False
    if (item.get("service") or "") != _service(alert.labels):
        return False
    item_labels: Mapping[str, Any] = item.get("labels") or {}
    return all(
        item_labels.get(k) == alert.labels.get(k)
        for k in _TARGET_LABELS
        if item_labels.get(k) and alert.labels.get(k)
    )


def filter_matches(params: Mapping[str, Any], alert: Alert) -> bool:
    """Whether a ``query_metrics`` filter (alert_name, service) would select ``alert``."""
    name, service = params.get("alert_name"), params.get("service")
    if name and name != alert.labels.get("alertname"):
        return False
    return not service or service == _service(alert.labels)


def uncovered(alerts: Sequence[Alert], items: Iterable[Mapping[str, Any]]) -> list[Alert]:
    """The firing alerts no observed metrics item is about."""
    seen = list(items)
    return [a for a in firing(alerts) if not any(item_covers(i, a) for i in seen)]
