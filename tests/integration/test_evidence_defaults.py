"""A fresh install's evidence on the real stack: the alerts themselves, no demo, no fake "no logs".

The five roles run with the tool backends of a fresh install (metrics from the
request's own alerts, no logs backend). An alert run about a service that is not
in the demo data must be answered from its alerts — both firing pods, their real
values — and a question about logs must say the logs are unavailable, never that
the query found no matching evidence.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from services.executor.tools.settings import NO_LOGS_BACKEND
from tests.support.kafka_io import Collector
from tests.support.pipeline import running_pipeline
from tests.support.stack import StackHandle
from tracebound import topics
from tracebound.client import AnswerReader, new_request, publish
from tracebound.events import (
    Alert,
    DiagnosisRequest,
    DiagnosisRequested,
    EvidenceProduced,
    Producer,
    ToolInvoked,
)
from tracebound.events.base import utcnow

LOGS_QUESTION = "are there errors in the logs of checkout-service?"
DEMO_MARKS = ("payment-service", "pod-payment-service", "2026-07-08", "92%", "Demo evidence")


def _alert(pod: str, value: str) -> Alert:
    return Alert(
        status="firing",
        labels={"alertname": "HighCPUUsage", "service": "checkout-service", "pod": pod},
        annotations={"summary": f"CPU above 80% on {pod}", "value": value, "threshold": "80"},
        startsAt="2026-12-01T09:58:00Z",
        generatorURL="http://127.0.0.1:9/graph?g0.expr=cpu",
        fingerprint=f"it-{pod}",
    )


def _alert_run() -> DiagnosisRequested:
    alerts = (_alert("checkout-a1", "97%"), _alert("checkout-b2", "88%"))
    return DiagnosisRequested(
        run_id=str(uuid.uuid4()),
        producer=Producer(service="test"),
        request=DiagnosisRequest(
            mode="AIOPS",
            query="Alertmanager: HighCPUUsage on checkout-service",
            alerts=alerts,
            requested_at=utcnow(),
        ),
    )


def test_defaults_answer_from_the_alerts_and_mark_logs_unavailable(
    stack: StackHandle, tmp_path: Path
) -> None:
    alert_run, logs_run = _alert_run(), new_request(LOGS_QUESTION)
    runs = {alert_run.run_id, logs_run.run_id}
    invoked = Collector(stack.kafka, topics.TOOL_INVOCATIONS)
    evidence = Collector(stack.kafka, topics.EVIDENCE)
    reader = AnswerReader(stack.kafka)
    with running_pipeline(stack, tmp_path, demo=False):
        publish(stack.kafka, [alert_run, logs_run])
        answers = reader.wait_for(runs, timeout_s=180)
    reader.close()
    invoked.close()
    evidence.close()
    assert set(answers) == runs
    calls = [e for e in invoked.events if isinstance(e, ToolInvoked) and e.run_id in runs]
    backends = {c.tool_invocation.backend.name for c in calls if c.tool_invocation.backend}
    assert "demo" not in backends and "request" in backends

    logs_calls = [
        c.tool_invocation
        for c in calls
        if c.run_id == logs_run.run_id and c.tool_invocation.tool_name == "query_logs"
    ]
    assert logs_calls, "the logs question queried the logs"
    for inv in logs_calls:
        assert inv.retrieval_details is not None
        assert inv.retrieval_details.evidence_status == "failed"
        assert inv.backend is not None and inv.backend.name == "none"
        assert inv.error_message == NO_LOGS_BACKEND
    rounds = [
        e
        for e in evidence.events
        if isinstance(e, EvidenceProduced) and e.run_id == logs_run.run_id
    ]
    assert rounds
    for produced in rounds:  # a retry round too: unavailable, never "no evidence"
        structured = produced.executor_structured_output
        assert isinstance(structured, dict)
        assert any(str(m).startswith("logs unavailable:") for m in structured["missing_info"])
        assert all(c["claim_type"] != "negative_observation" for c in structured["claims"])
    logs_text = answers[logs_run.run_id].user_facing_answer
    assert "logs unavailable" in logs_text
    assert "no matching evidence" not in logs_text

    alert_text = answers[alert_run.run_id].user_facing_answer
    assert "checkout-a1" in alert_text and "checkout-b2" in alert_text
    assert "current 97%" in alert_text and "current 88%" in alert_text
    assert "no matching evidence" not in alert_text
    assert not [mark for mark in DEMO_MARKS if mark in alert_text]
