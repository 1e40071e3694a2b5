"""query_metrics over the demo alerts: items, refs, filters and the fixed clock."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import ValidationError

from services.executor.tools import RunContext, ToolSettings
from services.executor.tools.demo_env import alerts_at, demo_logs, format_duration
from services.executor.tools.metrics import DemoAlertSource, QueryMetricsParams, QueryMetricsTool

SETTINGS = ToolSettings()


def tool(now: datetime = SETTINGS.demo_now) -> QueryMetricsTool:
    return QueryMetricsTool(DemoAlertSource(lambda: now, SETTINGS.demo_data_dir))


def run(**params: object) -> tuple[dict[str, Any], list[tuple[str, str]], str]:
    outcome = tool().run(QueryMetricsParams.model_validate(params), RunContext("r"))
    details = outcome.retrieval_details
    return (
        outcome.output,
        [(r.raw_path, r.text) for r in details.evidence_refs],
        details.evidence_status,
    )


def test_default_returns_the_three_firing_alerts() -> None:
    output, refs, status = run()
    assert status == "supported"
    alerts = output["alerts"]
    assert isinstance(alerts, list)
    assert [a["alert_name"] for a in alerts] == ["HighCPUUsage", "HighMemoryUsage", "SlowResponse"]
    assert [a["service"] for a in alerts] == ["payment-service", "order-service", "user-service"]
    assert [p for p, _ in refs] == ["$.alerts[0]", "$.alerts[1]", "$.alerts[2]"]
    assert refs[0][1].startswith(
        "HighCPUUsage, service=payment-service, state=firing, current=92%, threshold=80%, "
        "duration=25m, pod=pod-payment-service-7d8f9c6b5-x2k4m, active_at=2026-07-08T22:45:00Z"
    )
    assert "3.8 GB / 4 GB" in refs[1][1]
    assert "current=4.2s, threshold=3s, duration=10m" in refs[2][1]
    assert output["success"] is True


def test_envelope_items_have_every_field() -> None:
    output, _, _ = run(alert_name="HighMemoryUsage")
    (alert,) = output["alerts"]
    assert set(alert) == {
        "alert_name",
        "service",
        "description",
        "state",
        "severity",
        "active_at",
        "duration",
        "current_value",
        "threshold",
        "labels",
    }
    assert alert["active_at"] == "2026-07-08T22:55:00Z"
    assert alert["duration"] == "15m"
    assert alert["labels"]["pod"] == "pod-order-service-5c9d7b8f4-q7n2p"


def test_filters_are_exact() -> None:
    _, refs, _ = run(service="order-service")
    assert len(refs) == 1 and "HighMemoryUsage" in refs[0][1]
    _, refs, status = run(service="order")
    assert status == "no_evidence"


def test_state_all_includes_pending() -> None:
    output, _, _ = run(state="all")
    assert [a["state"] for a in output["alerts"]] == ["firing", "firing", "firing", "pending"]
    output, _, _ = run(state="pending")
    assert [a["alert_name"] for a in output["alerts"]] == ["HighDiskUsage"]


def test_no_match_gives_one_no_evidence_ref_with_the_filter() -> None:
    output, refs, status = run(alert_name="HighCPUUsage", service="inventory-service")
    assert status == "no_evidence"
    assert output["alerts"] == [] and output["message"] == "no matching alerts"
    assert refs == [
        (
            "$.no_evidence",
            "query_metrics returned no evidence; evidence_status=no_evidence; "
            "query=alert_name=HighCPUUsage service=inventory-service state=firing; topic=-; "
            "total=0; message=no matching alerts",
        )
    ]


def test_outcome_metadata() -> None:
    outcome = tool().run(QueryMetricsParams(), RunContext("r"))
    assert outcome.success and outcome.error_message is None
    assert outcome.retrieval_layer == "demo"
    assert outcome.l0_match_count is None and outcome.l1_match_count is None
    assert outcome.retrieval_details.relevance_level is None
    assert outcome.retrieval_details.dedup_reason is None
    assert 0 < len(outcome.output_preview) <= 300


def test_unknown_and_invalid_parameters_are_rejected() -> None:
    with pytest.raises(ValidationError):
        QueryMetricsParams.model_validate({"query": "x"})
    with pytest.raises(ValidationError):
        QueryMetricsParams.model_validate({"state": "resolved"})


def test_the_clock_moves_every_timestamp() -> None:
    later = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
    alerts = alerts_at(later, SETTINGS.demo_data_dir)
    assert alerts[0]["active_at"] == "2030-01-01T11:35:00Z"
    assert alerts[0]["duration"] == "25m"


def test_format_duration() -> None:
    assert format_duration(25 * 60) == "25m"
    assert format_duration(3900) == "1h5m"
    assert format_duration(7200) == "2h"
    assert format_duration(95) == "1m35s"
    assert format_duration(40) == "40s"
    assert format_duration(-3) == "0s"


def test_demo_logs_cover_the_narrative() -> None:
    logs = demo_logs(SETTINGS.demo_data_dir)
    assert 40 <= len(logs) <= 80
    topics = {log.topic for log in logs}
    assert topics == {"system-metrics", "application-logs", "database-slow-query", "system-events"}
    assert not [log for log in logs if "inventory-service" in (log.service + log.message)]
    messages = " ".join(log.message for log in logs)
    for needle in (
        "Connection is not available, request timed out after 30000ms",
        "java.lang.OutOfMemoryError: Java heap space",
        "OOMKilled, exit code 137",
        "RedisCommandTimeoutException: Command timed out after 2000ms",
        "Query timeout after 3000ms",
        "Query_time: 8.7s",
    ):
        assert needle in messages
