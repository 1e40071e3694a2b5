"""Prometheus as the alert source of ``query_metrics``.

Why ``/api/v1/alerts``: it is the server's own view of which alerting rules are
pending or firing right now, with labels, annotations, ``activeAt`` and the
value that triggered them — the same facts the demo data carries. Fields are
mapped conservatively: what Prometheus does not say (a threshold without an
annotation) stays null instead of being guessed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from services.executor.tools.base import RunContext, ToolBackendError
from services.executor.tools.demo_env import format_duration, iso_utc
from services.executor.tools.httpjson import get_json

_FRACTION = re.compile(r"(\.\d{1,6})\d*")


def wall_clock() -> datetime:
    return datetime.now(UTC)


def parse_time(value: str) -> datetime | None:
    """RFC 3339 with up to nanoseconds (Prometheus style) → aware datetime."""
    if not value:
        return None
    text = _FRACTION.sub(r"\1", value.strip()).replace("Z", "+00:00")
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _format_value(raw: Any) -> str | None:
    if raw in (None, ""):
        return None
    try:
        number = float(raw)
    except (TypeError, ValueError):
        return str(raw)
    return f"{number:.6g}"


def map_alert(alert: dict[str, Any], now: datetime) -> dict[str, Any]:
    """One Prometheus alert as a metrics-envelope item."""
    labels = {str(k): str(v) for k, v in (alert.get("labels") or {}).items()}
    notes = {str(k): str(v) for k, v in (alert.get("annotations") or {}).items()}
    active = parse_time(str(alert.get("activeAt") or ""))
    return {
        "alert_name": labels.get("alertname", ""),
        "service": labels.get("service") or labels.get("job"),
        "description": notes.get("description") or notes.get("summary") or "",
        "state": str(alert.get("state") or ""),
        "severity": labels.get("severity"),
        "active_at": iso_utc(active) if active else None,
        "duration": format_duration((now - active).total_seconds()) if active else None,
        "current_value": notes.get("current_value") or _format_value(alert.get("value")),
        "threshold": notes.get("threshold") or labels.get("threshold"),
        "labels": labels,
    }


class PrometheusAlertSource:
    """``AlertSource`` reading ``GET {url}/api/v1/alerts``."""

    layer = "prometheus"

    def __init__(
        self, url: str, timeout_s: float, now: Callable[[], datetime] = wall_clock
    ) -> None:
        self._url = url.rstrip("/")
        self._timeout_s = timeout_s
        self._now = now

    def fetch_alerts(self, ctx: RunContext | None = None) -> list[dict[str, Any]]:
        body = get_json("prometheus", f"{self._url}/api/v1/alerts", {}, self._timeout_s)
        data = body.get("data")
        raw = data.get("alerts") if isinstance(data, dict) else None
        if not isinstance(raw, list):
            raise ToolBackendError("prometheus: response has no data.alerts list")
        now = self._now()
        items = [map_alert(a, now) for a in raw if isinstance(a, dict)]
        items.sort(key=lambda a: (a["active_at"] or "", a["alert_name"]))
        return items
