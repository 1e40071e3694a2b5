"""Prometheus and Loki adapters against a local HTTP server with recorded answers."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from services.executor.tools import RunContext
from services.executor.tools.logs import (
    LogQuery,
    QueryLogsParams,
    QueryLogsTool,
    normalise_level,
    service_names,
)
from services.executor.tools.loki import LokiLogSearch, build_logql, quote
from services.executor.tools.metrics import QueryMetricsParams, QueryMetricsTool
from services.executor.tools.prometheus import PrometheusAlertSource
from tests.support.http_fixtures import FixtureServer, closed_port_url, serve
from tracebound.rfc3339 import parse_time

NOW = datetime(2026, 7, 8, 23, 10, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def server() -> Iterator[FixtureServer]:
    with serve() as state:
        yield state


def metrics(url: str) -> QueryMetricsTool:
    return QueryMetricsTool(PrometheusAlertSource(url, timeout_s=2, now=lambda: NOW))


def logs(url: str) -> QueryLogsTool:
    return QueryLogsTool(LokiLogSearch(url, timeout_s=2, now=lambda: NOW), region="eu-1")


def test_prometheus_alerts_are_mapped_and_sorted(server: FixtureServer) -> None:
    server.requests.clear()
    outcome = metrics(server.url("ok")).run(QueryMetricsParams(state="all"), RunContext("r"))
    assert outcome.success and outcome.retrieval_layer == "prometheus"
    alerts = outcome.output["alerts"]
    names = [a["alert_name"] for a in alerts]
    assert names == ["HighCPUUsage", "HighCPUUsage", "SlowResponse", "HighDiskUsage"]
    cpu, cpu2, slow, disk = alerts
    assert cpu["service"] == "payment-service"
    assert cpu["active_at"] == "2026-07-08T22:45:00Z"
    assert cpu["duration"] == "24m59s"
    assert cpu["current_value"] == "93.5"  # live, from /api/v1/query, for its own pod
    assert cpu["threshold"] == "80%" and cpu["comparison"] is None  # the alert's own
    assert cpu["unit"] == "percent" and cpu["for"] == "5m"
    assert (cpu2["current_value"], cpu2["threshold"], cpu2["comparison"]) == ("88.25", "80", ">")
    assert cpu["severity"] == "critical"
    assert slow["current_value"] == "4.2s"
    assert disk["service"] == "mysql"  # from the job label
    assert disk["description"] == "Disk of mysql-primary-0 above 85%"
    assert (disk["threshold"], disk["unit"], disk["current_value"]) == ("85", "percent", "86.5")
    texts = [r.text for r in outcome.retrieval_details.evidence_refs]
    assert texts[0].startswith(
        "HighCPUUsage, service=payment-service, state=firing, current=93.5%, threshold=80%, "
        "for=5m, duration=24m59s, pod=pod-payment-service-7d8f9c6b5-x2k4m, "
        "active_at=2026-07-08T22:45:00Z"
    )
    assert "current=88.25%, threshold=80%, comparison=>, for=5m" in texts[1]
    assert "instance=mysql-primary-0" in texts[3]
    calls = [(r.path, r.params) for r in server.requests if r.path.startswith("/ok/api/v1/")]
    assert ("/ok/api/v1/rules", {"type": "alert"}) in calls
    queries = [p["query"] for path, p in calls if path == "/ok/api/v1/query"]
    assert len(queries) == len(set(queries)) == 2  # one evaluation per rule, per call


def test_prometheus_filters_client_side(server: FixtureServer) -> None:
    tool = metrics(server.url("ok"))
    outcome = tool.run(QueryMetricsParams(), RunContext("r"))
    assert [a["state"] for a in outcome.output["alerts"]] == ["firing"] * 3
    outcome = tool.run(QueryMetricsParams(alert_name="HighMemoryUsage"), RunContext("r"))
    assert outcome.retrieval_details.evidence_status == "no_evidence"


def test_prometheus_empty_answer_is_no_evidence(server: FixtureServer) -> None:
    outcome = metrics(server.url("empty")).run(QueryMetricsParams(), RunContext("r"))
    assert outcome.success
    assert outcome.retrieval_details.evidence_status == "no_evidence"


@pytest.mark.parametrize("mode", ["fail", "badjson", "error", "rulesfail"])
def test_prometheus_failures_are_recorded_not_raised(server: FixtureServer, mode: str) -> None:
    outcome = metrics(server.url(mode)).run(QueryMetricsParams(), RunContext("r"))
    assert outcome.success is False
    assert outcome.error_message and outcome.error_message.startswith("prometheus:")
    assert outcome.retrieval_details.evidence_status == "failed"
    assert outcome.retrieval_details.evidence_refs == ()
    assert outcome.output["success"] is False and outcome.output["alerts"] == []


def test_prometheus_unreachable_is_a_failed_outcome() -> None:
    outcome = metrics(closed_port_url()).run(QueryMetricsParams(), RunContext("r"))
    assert outcome.success is False
    assert "unreachable" in (outcome.error_message or "")
    assert outcome.retrieval_details.evidence_status == "failed"


def test_parse_time_accepts_nanoseconds_and_offsets() -> None:
    assert parse_time("2026-07-08T22:45:00.113802631Z") == datetime(
        2026, 7, 8, 22, 45, 0, 113802, tzinfo=UTC
    )
    assert parse_time("2026-07-09T00:45:00+02:00") == datetime(2026, 7, 8, 22, 45, tzinfo=UTC)
    assert parse_time("yesterday") is None
    assert parse_time("") is None


def test_loki_lines_become_log_items(server: FixtureServer) -> None:
    tool = logs(server.url("ok"))
    params = QueryLogsParams(query="order-service HikariPool-1", window_minutes=30, limit=10)
    outcome = tool.run(params, RunContext("r"))
    assert outcome.success and outcome.retrieval_layer == "loki"
    out = outcome.output
    assert out["region"] == "eu-1" and out["log_topic"] == "application-logs"
    assert out["total"] == 3
    assert [r["timestamp"] for r in out["logs"]] == [
        "2026-07-08 22:58:02",
        "2026-07-08 23:05:28",
        "2026-07-08 23:05:44",
    ]
    second = out["logs"][1]
    assert second == {
        "timestamp": "2026-07-08 23:05:28",
        "level": "ERROR",
        "service": "order-service",
        "instance": "pod-order-service-5c9d7b8f4-q7n2p",
        "message": "HikariPool-1 - Connection is not available, request timed out after 30000ms",
        "metrics": {},
    }
    assert out["logs"][2]["instance"] == "pod-order-service-5c9d7b8f4-z4t6v"
    assert out["logs"][2]["level"] == "WARN"
    ref = outcome.retrieval_details.evidence_refs[1]
    assert ref.raw_path == "$.logs[1]"
    assert ref.text == (
        "2026-07-08 23:05:28 ERROR order-service pod-order-service-5c9d7b8f4-q7n2p "
        "HikariPool-1 - Connection is not available, request timed out after 30000ms"
    )
    sent = server.requests[-1]
    assert sent.path == "/ok/loki/api/v1/query_range"
    assert sent.params["query"] == (
        '{topic="application-logs", service="order-service"} |= "HikariPool-1"'
    )
    assert sent.params["limit"] == "10" and sent.params["direction"] == "backward"
    window_ns = int(sent.params["end"]) - int(sent.params["start"])
    assert window_ns == 30 * 60 * 1_000_000_000


def test_loki_limit_keeps_the_newest(server: FixtureServer) -> None:
    outcome = logs(server.url("ok")).run(
        QueryLogsParams(query="HikariPool-1", limit=1), RunContext("r")
    )
    assert outcome.output["total"] == 3
    assert [r["timestamp"] for r in outcome.output["logs"]] == ["2026-07-08 23:05:44"]


def test_loki_rechecks_service_and_level(server: FixtureServer) -> None:
    tool = logs(server.url("ok"))
    outcome = tool.run(QueryLogsParams(query="inventory-service HikariCP"), RunContext("r"))
    assert outcome.retrieval_details.evidence_status == "no_evidence"
    assert outcome.retrieval_details.evidence_refs[0].raw_path == "$.no_evidence"
    outcome = tool.run(QueryLogsParams(query="pool", level="warning"), RunContext("r"))
    assert [r["level"] for r in outcome.output["logs"]] == ["WARN"]
    assert (
        server.requests[-1].params["query"].startswith('{topic="application-logs", level="WARN"}')
    )


def test_loki_two_services_never_match_and_send_nothing(server: FixtureServer) -> None:
    before = len(server.requests)
    outcome = logs(server.url("ok")).run(
        QueryLogsParams(query="order-service user-service timeout"), RunContext("r")
    )
    assert outcome.retrieval_details.evidence_status == "no_evidence"
    assert len(server.requests) == before


@pytest.mark.parametrize("mode", ["fail", "badjson", "error", "rulesfail"])
def test_loki_failures_are_recorded_not_raised(server: FixtureServer, mode: str) -> None:
    outcome = logs(server.url(mode)).run(QueryLogsParams(query="x"), RunContext("r"))
    assert outcome.success is False
    assert (outcome.error_message or "").startswith("loki:")
    assert outcome.retrieval_details.evidence_status == "failed"
    assert outcome.retrieval_details.evidence_refs == ()
    assert outcome.output["logs"] == [] and outcome.output["success"] is False


def test_loki_unreachable_is_a_failed_outcome() -> None:
    outcome = logs(closed_port_url()).run(QueryLogsParams(query="x"), RunContext("r"))
    assert outcome.success is False
    assert outcome.retrieval_details.evidence_status == "failed"


def test_logql_quoting_cannot_break_out() -> None:
    assert quote('a"b\\c\nd') == '"a\\"b\\\\c\\nd"'
    query = LogQuery(
        topic='app"} |= "x',
        text='say "hi" \\ order-service',
        services=("order-service",),
        level=None,
        window_minutes=60,
        limit=20,
    )
    assert build_logql(query) == (
        '{topic="app\\"} |= \\"x", service="order-service"} |= "say" |= "hi" |= "\\\\"'
    )


def test_service_names_are_whole_tokens() -> None:
    assert service_names("inventory-service HikariCP", None) == ("inventory-service",)
    assert service_names("order-service, user-service!", "order-service") == (
        "order-service",
        "user-service",
    )
    assert service_names("self-service portal", None) == ("self-service",)
    assert service_names("the service is slow; order-services", None) == ()
    assert service_names("x.order-service", None) == ()


def test_level_aliases() -> None:
    assert normalise_level("warning") == "WARN"
    assert normalise_level(" error ") == "ERROR"
    assert normalise_level("") is None
    assert normalise_level(None) is None


def test_logql_ignores_punctuation_around_service_names() -> None:
    query = LogQuery("application-logs", "order-service, timeout", ("order-service",), None, 60, 20)
    assert build_logql(query) == '{topic="application-logs", service="order-service"} |= "timeout"'
