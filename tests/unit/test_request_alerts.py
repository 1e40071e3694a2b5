"""The request's alerts are evidence, each firing one is covered, a failure is not "no evidence"."""

from __future__ import annotations

import urllib.parse
from datetime import UTC, datetime
from typing import Any

from replay.chain import Chain
from services.executor.claims import build_evidence
from services.executor.gate import ToolGate
from services.executor.settings import ExecutorSettings
from services.executor.tools import RunContext
from services.executor.tools.base import EvidenceTool
from services.executor.tools.logs import NoLogBackend, QueryLogsTool
from services.executor.tools.metrics import QueryMetricsParams, QueryMetricsTool
from services.executor.tools.refs import UNSTATED
from services.executor.tools.request_alerts import RequestAlertSource
from services.executor.tools.settings import NO_LOGS_BACKEND
from tracebound.events import (
    Alert,
    DiagnosisRequest,
    DiagnosisRequested,
    ExecutionPlan,
    Producer,
    ToolBackend,
)

REQUESTED_AT = datetime(2026, 12, 1, 10, 0, 2, 500000, tzinfo=UTC)
STARTED = "2026-12-01T10:00:00.123456789Z"


def cpu_alert(pod: str, value: str | None, **notes: str) -> Alert:
    labels = {"alertname": "HighCPUUsage", "service": "checkout-service", "pod": pod}
    annotations = {"summary": f"CPU high on {pod}", **notes}
    if value is not None:
        annotations["value"] = value
    return Alert(
        status="firing",
        labels=labels,
        annotations=annotations,
        startsAt=STARTED,
        generatorURL="http://prometheus.test:9090/graph?g0.expr=cpu",
        fingerprint=f"fp-{pod}",
    )


TWO_PODS = (
    cpu_alert("checkout-7f9-a", "97", threshold="80", unit="%"),
    cpu_alert("checkout-7f9-b", "88", threshold="80", unit="%"),
)


def request(*alerts: Alert, query: str = "HighCPUUsage on checkout-service") -> DiagnosisRequest:
    mode = "AIOPS" if alerts else "CHAT"
    return DiagnosisRequest(mode=mode, query=query, alerts=alerts, requested_at=REQUESTED_AT)


def tools(source: Any = None, logs: EvidenceTool | None = None) -> dict[str, EvidenceTool]:
    metrics = QueryMetricsTool(source or RequestAlertSource(), ToolBackend(name="request"))
    log_tool = logs or QueryLogsTool(
        NoLogBackend(NO_LOGS_BACKEND), "local", ToolBackend(name="none")
    )
    return {metrics.name: metrics, log_tool.name: log_tool}


def round_of(
    req: DiagnosisRequest,
    calls: list[tuple[str, dict[str, Any]]],
    source: Any = None,
    max_claims: int = 6,
) -> tuple[dict[str, Any], ToolGate]:
    gate = ToolGate(tools(source), ExecutorSettings(), "run-1", 1, False, req)
    for name, params in calls:
        gate.call(name, params)
    focus = ExecutionPlan(services=("checkout-service",), alert_names=("HighCPUUsage",))
    evidence = build_evidence(
        gate.invocations,
        focus,
        req.language,
        narrow=False,
        max_claims=max_claims,
        alerts=req.alerts,
    )
    return evidence, gate


CPU_FILTER = ("query_metrics", {"alert_name": "HighCPUUsage", "service": "checkout-service"})


def test_each_alert_of_the_request_is_an_item_with_its_own_values_and_duration() -> None:
    ctx = RunContext("r", alerts=TWO_PODS, requested_at=REQUESTED_AT)
    outcome = tools()["query_metrics"].run(QueryMetricsParams(), ctx)
    assert outcome.success and outcome.retrieval_layer == "request"
    items = outcome.output["alerts"]
    assert [i["current_value"] for i in items] == ["97", "88"]
    first = items[0]
    assert first["active_at"] == "2026-12-01T10:00:00Z"
    assert first["duration"] == "2s"  # startsAt to requested_at, never the wall clock
    assert (first["threshold"], first["unit"], first["severity"]) == ("80", "%", None)
    assert first["fingerprint"] == "fp-checkout-7f9-a"
    assert first["generatorURL"].startswith("http://prometheus.test:9090/")
    assert first["annotations"]["summary"] == "CPU high on checkout-7f9-a"
    refs = outcome.retrieval_details.evidence_refs
    assert [r.raw_path for r in refs] == ["$.alerts[0]", "$.alerts[1]"]
    assert "current=97%, threshold=80%, duration=2s, pod=checkout-7f9-a" in refs[0].text
    assert "current=88%" in refs[1].text


def test_a_request_without_alerts_cannot_answer_metrics_queries() -> None:
    outcome = tools()["query_metrics"].run(QueryMetricsParams(), RunContext("r"))
    assert not outcome.success
    assert outcome.retrieval_details.evidence_status == "failed"
    assert "the request carries no alerts" in (outcome.error_message or "")


def test_every_firing_pod_is_a_claim_with_its_value() -> None:
    evidence, gate = round_of(request(*TWO_PODS), [CPU_FILTER])
    texts = [c["claim_text"] for c in evidence["claims"]]
    assert texts == [
        "checkout-service has a firing HighCPUUsage alert: current 97%, threshold 80%, for 2s, "
        'pod checkout-7f9-a, summary "CPU high on checkout-7f9-a".',
        "checkout-service has a firing HighCPUUsage alert: current 88%, threshold 80%, for 2s, "
        'pod checkout-7f9-b, summary "CPU high on checkout-7f9-b".',
    ]
    assert evidence["missing_info"] == []
    assert gate.invocations[0].backend == ToolBackend(name="request")
    excerpt = evidence["claims"][1]["evidence_bindings"][0]["evidence_excerpt"]
    assert excerpt == gate.invocations[0].retrieval_details.evidence_refs[1].text  # type: ignore[union-attr]


def test_an_absent_value_is_stated_as_unstated_never_invented_or_dashed() -> None:
    evidence, _ = round_of(request(cpu_alert("checkout-7f9-a", None)), [CPU_FILTER])
    (claim,) = evidence["claims"]
    assert claim["claim_text"] == (
        f"checkout-service has a firing HighCPUUsage alert: current {UNSTATED}, "
        f"threshold {UNSTATED}, for 2s, pod checkout-7f9-a, "
        'summary "CPU high on checkout-7f9-a".'
    )
    assert "-," not in claim["claim_text"]
    assert (
        f"current={UNSTATED}, threshold={UNSTATED}"
        in claim["evidence_bindings"][0]["evidence_excerpt"]
    )


def test_the_generator_url_gives_threshold_and_unit_and_the_summary_the_value() -> None:
    expr = urllib.parse.quote('checkout_cpu_usage_percent{tb_test="x"} > 90')
    alert = cpu_alert("checkout-7f9-a", None).model_copy(
        update={
            "annotations": {"summary": "checkout-service CPU busy at 97 on checkout-7f9-a"},
            "generatorURL": f"http://prometheus.test:9090/graph?g0.expr={expr}&g0.tab=1",
        }
    )
    evidence, gate = round_of(request(alert), [CPU_FILTER])
    item = gate.invocations[0].output["alerts"][0]
    assert (item["threshold"], item["comparison"], item["unit"]) == ("90", ">", "percent")
    assert item["current_value"] == "97"  # the alert states it only in its summary
    (claim,) = evidence["claims"]
    assert claim["claim_text"] == (
        "checkout-service has a firing HighCPUUsage alert: current 97%, threshold 90%, "
        'for 2s, pod checkout-7f9-a, summary "checkout-service CPU busy at 97 on checkout-7f9-a".'
    )
    excerpt = claim["evidence_bindings"][0]["evidence_excerpt"]
    assert "threshold=90%, comparison=>" in excerpt and "busy at 97" in excerpt


def test_an_alert_cut_by_the_claim_budget_is_named_in_missing_info() -> None:
    evidence, _ = round_of(request(*TWO_PODS), [CPU_FILTER], max_claims=1)
    assert len(evidence["claims"]) == 1
    (missing,) = evidence["missing_info"]
    assert "HighCPUUsage (service=checkout-service, pod=checkout-7f9-b" in missing
    assert "not covered" in missing


class EmptyBackend:
    """A metrics backend that answers, but does not hold the alert (another Prometheus)."""

    layer = "prometheus"

    def fetch_alerts(self, ctx: RunContext) -> list[dict[str, Any]]:
        return []


def test_the_alert_that_started_the_run_is_never_declared_unseen() -> None:
    evidence, gate = round_of(request(*TWO_PODS), [CPU_FILTER], source=EmptyBackend())
    assert gate.invocations[0].retrieval_details.evidence_status == "no_evidence"  # type: ignore[union-attr]
    assert evidence["claims"] == []
    joined = " | ".join(evidence["missing_info"])
    assert "yet the request carries it firing" in joined
    assert "checkout-7f9-a" in joined and "checkout-7f9-b" in joined
    assert "no matching evidence" not in joined


def test_no_logs_backend_is_unavailable_not_no_evidence() -> None:
    logs_call = ("query_logs", {"query": "error checkout-service"})
    evidence, gate = round_of(request(query="errors in checkout-service logs?"), [logs_call])
    inv = gate.invocations[0]
    assert inv.backend == ToolBackend(name="none")
    assert inv.retrieval_details is not None
    assert inv.retrieval_details.evidence_status == "failed"
    assert inv.retrieval_details.evidence_refs == ()
    assert evidence["claims"] == []
    assert evidence["missing_info"] == [
        f"logs unavailable: query_logs could not run ({NO_LOGS_BACKEND})"
    ]


def test_an_alert_run_on_defaults_answers_from_the_alerts_and_never_from_the_demo() -> None:
    event = DiagnosisRequested(
        run_id="run-alerts",
        producer=Producer(service="test"),
        request=request(*TWO_PODS, query="Alertmanager: HighCPUUsage on checkout-service"),
    )
    result = Chain.build(tools()).run(event)
    answer = result.answer
    assert answer is not None
    text = answer.user_facing_answer
    assert "97%" in text and "88%" in text
    assert "no matching evidence" not in text
    assert "payment-service" not in text and "Demo evidence" not in text
    backends = {inv.backend.name for inv in result.invocations if inv.backend}
    assert "demo" not in backends
