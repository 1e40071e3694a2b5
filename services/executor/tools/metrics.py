"""``query_metrics``: the alerts currently active, as citable items.

Its sources: the alerts the request carries (the default), Prometheus, or the
demo environment. Why filters are applied here rather than in each backend: the demo data and
Prometheus' ``/api/v1/alerts`` both hand back the full alert list, and one exact
filter (alert name, service, state) keeps the two backends' answers identical
for the same data — which replay and the evaluations rely on.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

from services.executor.tools import refs
from services.executor.tools.base import (
    RunContext,
    ToolBackendError,
    ToolOutcome,
    ToolParams,
    coerce_params,
    failed_outcome,
    preview,
)
from services.executor.tools.demo_env import alerts_at
from tracebound.events import ToolBackend

TOOL_NAME = "query_metrics"


class QueryMetricsParams(ToolParams):
    alert_name: str | None = Field(default=None, max_length=200)
    service: str | None = Field(default=None, max_length=200)
    state: Literal["firing", "pending", "all"] = "firing"


class AlertSource(Protocol):
    """Where active alerts come from; items use the metrics-envelope fields."""

    layer: str

    def fetch_alerts(self, ctx: RunContext) -> list[dict[str, Any]]: ...


class DemoAlertSource:
    """The shipped demo alerts on the demo clock."""

    layer = "demo"

    def __init__(self, now: Callable[[], datetime], data_dir: Path) -> None:
        self._now = now
        self._data_dir = data_dir

    def fetch_alerts(self, ctx: RunContext) -> list[dict[str, Any]]:
        return alerts_at(self._now(), self._data_dir)


def filter_text(p: QueryMetricsParams) -> str:
    """The filter as one line, e.g. ``alert_name=X service=Y state=firing``."""
    parts = [f"alert_name={p.alert_name}"] if p.alert_name else []
    if p.service:
        parts.append(f"service={p.service}")
    parts.append(f"state={p.state}")
    return " ".join(parts)


def matches(alert: dict[str, Any], p: QueryMetricsParams) -> bool:
    if p.alert_name and alert.get("alert_name") != p.alert_name:
        return False
    if p.service and alert.get("service") != p.service:
        return False
    return p.state == "all" or alert.get("state") == p.state


class QueryMetricsTool:
    """List active alerts; each becomes ``$.alerts[i]``."""

    name = TOOL_NAME
    description = (
        "List the run's alerts (from the request, or active in Prometheus), filtered by "
        "exact alert name, service and state. Each alert, with its value, threshold and "
        "duration, is $.alerts[i]; else $.no_evidence."
    )
    params_model: type[BaseModel] = QueryMetricsParams

    def __init__(self, source: AlertSource, backend: ToolBackend | None = None) -> None:
        self._source = source
        self.backend = backend or ToolBackend(name=source.layer)

    def run(self, params: BaseModel, ctx: RunContext) -> ToolOutcome:
        p = coerce_params(params, QueryMetricsParams)
        query = filter_text(p)
        envelope: dict[str, Any] = {"success": True, "alerts": [], "message": ""}
        layer = self._source.layer
        try:
            alerts = [a for a in self._source.fetch_alerts(ctx) if matches(a, p)]
        except ToolBackendError as exc:
            return failed_outcome(envelope, str(exc), layer)
        if not alerts:
            message = "no matching alerts"
            envelope["message"] = message
            return ToolOutcome(
                output=envelope,
                retrieval_details=refs.no_evidence(TOOL_NAME, query, None, message),
                success=True,
                retrieval_layer=layer,
                output_preview=preview(f"no matching alerts for {query}"),
            )
        message = f"found {len(alerts)} alerts ({query})"
        envelope.update(alerts=alerts, message=message)
        summary = ", ".join(
            f"{a['alert_name']}({a.get('service') or '-'}, {a.get('state')})" for a in alerts
        )
        return ToolOutcome(
            output=envelope,
            retrieval_details=refs.supported(
                refs.item_refs("alerts", [refs.alert_text(a) for a in alerts])
            ),
            success=True,
            retrieval_layer=layer,
            output_preview=preview(f"{len(alerts)} alerts: {summary}"),
        )
