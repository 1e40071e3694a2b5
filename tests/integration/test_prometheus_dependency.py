"""The dependency a client names its own way is read on a real Prometheus.

A gRPC client names its upstream by its service (``aml.v1.ScreeningService``);
kube-state-metrics names it by its deployment (``kyc-aml-screen``). Two hours of
both are backfilled with ``promtool tsdb create-blocks-from openmetrics``. A
``dependency`` call must read the deployment the client's name means: its
replicas fell to 0 of 3 and its container restarts rose.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from services.executor.tools.base import RunContext
from services.executor.tools.prometheus_scope import QueryPrometheusParams
from services.executor.tools.query_prometheus import QueryPrometheusTool
from services.executor.tools.series_text import series_text
from tests.support.incident_stack import backfill
from tests.support.openmetrics import document, family
from tests.support.prometheus import running_monitoring
from tracebound.events import Alert, ToolBackend

NAMESPACE, SERVICE, UPSTREAM = "kyc-dep", "kyc-onboarding", "kyc-aml-screen"
KSM = f'job="kube-state-metrics",instance="10.4.0.8:8080",namespace="{NAMESPACE}"'


def _openmetrics(end: float) -> str:
    """One sample a minute for two hours: both deployments' replicas, the upstream's
    restarts (rising in the last 10 minutes) and its available replicas (3, then 0)."""
    deployments = [f'{KSM},deployment="{d}"' for d in (SERVICE, UPSTREAM)]
    pod = f'{KSM},pod="{UPSTREAM}-5f8c7-2vkpt",container="aml-screen"'
    return document(
        family(
            "kube_deployment_spec_replicas", "gauge", dict.fromkeys(deployments, lambda m: 3), end
        ),
        family(
            "kube_deployment_status_replicas_available",
            "gauge",
            {deployments[0]: lambda m: 3, deployments[1]: lambda m: 0 if m > -10 else 3},
            end,
        ),
        family(
            "kube_pod_container_status_restarts", "counter", {pod: lambda m: max(0, m + 10)}, end
        ),
    )


def test_a_grpc_service_name_is_read_as_its_deployment(tmp_path: Path) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    data = backfill(_openmetrics(now.timestamp()), tmp_path / "prometheus")
    alert = Alert(
        status="firing",
        labels={"alertname": "KycErrors", "service": SERVICE, "namespace": NAMESPACE},
        startsAt=(now - timedelta(minutes=5)).isoformat(),
    )
    ctx = RunContext(run_id="r", alerts=(alert,), requested_at=now)
    params = QueryPrometheusParams(
        queries="dependency_state", service=SERVICE, dependency="aml.v1.ScreeningService"
    )
    with running_monitoring(tmp_path / "monitoring", "http://127.0.0.1:9/", data_dir=data) as mon:
        tool = QueryPrometheusTool(mon.prometheus_url, 5.0, ToolBackend(name="prometheus"))
        outcome = tool.run(params, ctx)
    assert outcome.success, outcome.error_message
    assert outcome.output["dependency"] == {
        "named": "aml.v1.ScreeningService",
        "workload": UPSTREAM,
    }
    series = outcome.output["series"]
    assert series and all(s["dependency"] == UPSTREAM for s in series)
    by_query = {s["query"]: s for s in series}
    assert by_query["restarts"]["facts"]["direction"] == "rose"
    available = series_text(by_query["replicas_available"])
    assert "0 of 3" in available, available
    assert SERVICE not in " ".join(series_text(s) for s in series), "never the alert's own"
