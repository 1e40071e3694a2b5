"""What a ``query_prometheus`` call is about: its parameters, and the alert labels and
onset its queries are scoped to.

Why: every query of a call is scoped to the run's own alert labels, never run
unscoped; a dependency is looked up only in the alert's namespace. Both rules are
decided here, once, from the run's alerts and the call's parameters.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field

from services.executor.tools.base import ToolParams
from services.executor.tools.promql import SCOPE_LABELS
from tracebound.events import Alert
from tracebound.rfc3339 import parse_time

# a dependency is named by a metric label: a plain service name only
DEPENDENCY_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"
# what of the alert's scope a dependency shares
DEPENDENCY_KEEPS = ("namespace", "cluster")
# the labels a dependency's name is looked up among, in the alert's namespace
WORKLOAD_LABELS = ("deployment", "statefulset", "service")


class QueryPrometheusParams(ToolParams):
    queries: str = Field(min_length=1, max_length=400)
    service: str | None = Field(default=None, max_length=200)
    alert_name: str | None = Field(default=None, max_length=200)
    window_minutes: int = Field(default=120, ge=10, le=360)
    # after the queries, read the service's other metrics that changed (promql_sweep)
    sweep: bool = False
    # a service the alert's service calls (an upstream its failing calls name): the
    # queries are scoped to it, in the alert's namespace, with the alert's onset
    dependency: str | None = Field(default=None, pattern=DEPENDENCY_NAME)


def relevant_alerts(alerts: Sequence[Alert], p: QueryPrometheusParams) -> list[Alert]:
    """The run's alerts of the call's service and alert name (of its service, when none
    has that name)."""
    return [
        a
        for a in alerts
        if (not p.service or a.labels.get("service") == p.service)
        and (not p.alert_name or a.labels.get("alertname") == p.alert_name)
    ] or [a for a in alerts if not p.service or a.labels.get("service") == p.service]


def scope_labels(alerts: Sequence[Alert], p: QueryPrometheusParams) -> tuple[dict[str, str], str]:
    """The labels queries are scoped to, and the onset, from the run's matching alerts.

    Alerts of the named service (and alert name) that agree on a label give it;
    the service parameter gives ``service`` when no alert does. The onset is the
    earliest ``startsAt`` among them.
    """
    relevant = relevant_alerts(alerts, p)
    labels: dict[str, str] = {}
    for key in SCOPE_LABELS:
        values = {a.labels.get(key) or "" for a in relevant}
        if len(values) == 1 and (value := values.pop()):
            labels[key] = value
    if p.service:
        labels.setdefault("service", p.service)
    if p.dependency:
        # a dependency is looked up only where the alert is, never cluster-wide
        kept = {k: v for k, v in labels.items() if k in DEPENDENCY_KEEPS}
        labels = {**kept, "service": p.dependency} if "namespace" in kept else {}
    starts = sorted(t for a in relevant if (t := parse_time(a.startsAt)) is not None)
    return labels, (starts[0].isoformat() if starts else "")
