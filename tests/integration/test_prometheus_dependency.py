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
from tests.support.prometheus import running_monitoring
from tracebound.events import Alert, ToolBackend

NAMESPACE, SERVICE, UPSTREAM = "kyc-dep", "kyc-onboarding", "kyc-aml-screen"
KSM = f'job="kube-state-metrics",instance="10.4.0.8:8080",namespace="{NAMESPACE}"'


def _openmetrics(end: float) -> str:
    """One sample a minute for two hours: both deployments' replicas, the upstream's
    restarts (rising in the last 10 minutes) and its available replicas (3, then 0)."""
    minutes = range(-120, 1)

    def at(m: int) -> str:
        return f"{end + m * 60:.0f}"

    lines = ["# TYPE kube_deployment_spec_replicas gauge"]
    lines += [
        f'kube_deployment_spec_replicas{{{KSM},deployment="{d}"}} 3 {at(m)}'
        for d in (SERVICE, UPSTREAM)
        for m in minutes
    ]
    lines += ["# TYPE kube_deployment_status_replicas_available gauge"]
    lines += [
        f'kube_deployment_status_replicas_available{{{KSM},deployment="{d}"}} {n} {at(m)}'
        for d in (SERVICE, UPSTREAM)
        for m in minutes
        for n in [0 if d == UPSTREAM and m > -10 else 3]
    ]
    lines += ["# TYPE kube_pod_container_status_restarts counter"]
    lines += [
        f'kube_pod_container_status_restarts_total{{{KSM},pod="{UPSTREAM}-5f8c7-2vkpt",'
        f'container="aml-screen"}} {max(0, m + 10)} {at(m)}'
        for m in minutes
    ]
    return "\n".join(lines) + "\n# EOF\n"


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
