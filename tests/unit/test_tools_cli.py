"""``tracebound tool``: parameter parsing, invalid input, and runs without a database."""

from __future__ import annotations

import json

import pytest

from services.executor.tools import DEMO_ENV, ToolSettings, build_tools
from services.executor.tools.cli import parse_params, validate_params
from tests.support.http_fixtures import serve
from tracebound.cli import main
from tracebound.errors import ConfigError, InvalidInputError


@pytest.fixture(autouse=True)
def _demo_tools(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI runs read the demo data, asked for the way a user would: by environment."""
    for key, value in DEMO_ENV.items():
        monkeypatch.setenv(key, value)


def test_parse_params() -> None:
    assert parse_params(["query=a=b", "limit=5", "service="]) == {
        "query": "a=b",
        "limit": "5",
        "service": "",
    }
    with pytest.raises(InvalidInputError):
        parse_params(["query"])
    with pytest.raises(InvalidInputError):
        parse_params(["limit=1", "limit=2"])


def test_validate_converts_ints_and_rejects_bad_values() -> None:
    tools = build_tools()
    params = validate_params(tools["query_logs"], {"query": "x", "limit": "5"})
    assert params.model_dump()["limit"] == 5
    for raw in ({"query": "x", "limit": "0"}, {"query": "x", "colour": "red"}, {}):
        with pytest.raises(InvalidInputError):
            validate_params(tools["query_logs"], raw)
    with pytest.raises(InvalidInputError):
        validate_params(tools["lookup_knowledge"], {"query": "x" * 501})


def test_build_tools_names_and_strict_models() -> None:
    tools = build_tools()
    assert set(tools) == {"query_metrics", "query_logs", "lookup_knowledge", "query_prometheus"}
    for name, tool in tools.items():
        assert tool.name == name and tool.description
        assert tool.params_model.model_config.get("extra") == "forbid"


def test_prometheus_without_url_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRACEBOUND_TOOLS_PROMETHEUS_URL", raising=False)
    with pytest.raises(ConfigError):
        build_tools(ToolSettings(metrics_backend="prometheus"))


def test_settings_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRACEBOUND_TOOLS_METRICS_BACKEND", "prometheus")
    monkeypatch.setenv("TRACEBOUND_TOOLS_PROMETHEUS_URL", "http://prom:9090/")
    monkeypatch.setenv("TRACEBOUND_TOOLS_DEMO_NOW", "2027-01-01T00:00:00")
    monkeypatch.setenv("TRACEBOUND_PG_DSN", "postgresql://x@127.0.0.1:1/y")
    settings = ToolSettings()
    assert settings.require_url("prometheus") == "http://prom:9090"
    assert settings.demo_now.isoformat() == "2027-01-01T00:00:00+00:00"
    assert settings.dsn == "postgresql://x@127.0.0.1:1/y"


def test_unknown_tool_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tool", "query_tickets"]) == 2
    assert "unknown tool 'query_tickets'" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["tool", "query_metrics", "--param", "colour=red"],
        ["tool", "query_metrics", "--param", "state=resolved"],
        ["tool", "query_logs", "--param", "query=x", "--param", "limit=many"],
        ["tool", "query_logs"],
    ],
)
def test_invalid_params_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert "invalid input" in capsys.readouterr().err


def test_query_metrics_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tool", "query_metrics", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert set(record) == {
        "tool_name",
        "backend",
        "input_params",
        "output",
        "retrieval_details",
        "success",
        "error_message",
        "retrieval_layer",
        "l0_match_count",
        "l1_match_count",
        "duration_ms",
    }
    assert record["tool_name"] == "query_metrics"
    assert record["backend"] == {"name": "demo", "url": ""}
    assert record["input_params"] == {"alert_name": None, "service": None, "state": "firing"}
    assert [a["alert_name"] for a in record["output"]["alerts"]] == [
        "HighCPUUsage",
        "HighMemoryUsage",
        "SlowResponse",
    ]
    details = record["retrieval_details"]
    assert details["evidence_status"] == "supported"
    assert [r["raw_path"] for r in details["evidence_refs"]] == [
        "$.alerts[0]",
        "$.alerts[1]",
        "$.alerts[2]",
    ]


def test_readable_summary(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tool", "query_metrics", "--param", "service=inventory-service"]) == 0
    out = capsys.readouterr().out
    assert "evidence_status: no_evidence" in out
    assert "backend: demo " in out
    assert "$.no_evidence  query_metrics returned no evidence" in out


def test_fresh_install_defaults_fail_visibly_instead_of_reading_demo_data(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for key in DEMO_ENV:
        monkeypatch.delenv(key)
    assert main(["tool", "query_logs", "--param", "query=error checkout-service"]) == 1
    out = capsys.readouterr().out
    assert "backend: none " in out and "evidence_status: failed" in out
    assert "no logs backend configured (TRACEBOUND_TOOLS_LOGS_BACKEND)" in out
    assert "no_evidence" not in out
    # no request here, so the request's own alerts cannot answer either
    assert main(["tool", "query_metrics"]) == 1
    out = capsys.readouterr().out
    assert "backend: request " in out and "evidence_status: failed" in out
    assert "the request carries no alerts" in out


def test_failed_backend_exits_1_with_failed_status(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with serve() as server:
        monkeypatch.setenv("TRACEBOUND_TOOLS_METRICS_BACKEND", "prometheus")
        monkeypatch.setenv("TRACEBOUND_TOOLS_PROMETHEUS_URL", server.url("fail"))
        assert main(["tool", "query_metrics", "--json"]) == 1
    record = json.loads(capsys.readouterr().out)
    assert record["success"] is False
    assert record["retrieval_details"] == {
        "evidence_status": "failed",
        "evidence_refs": [],
        "relevance_level": None,
        "dedup_reason": None,
    }
    assert "HTTP 500" in record["error_message"]


def test_recorded_backend_urls_carry_no_credentials_or_query() -> None:
    settings = ToolSettings(
        metrics_backend="prometheus",
        prometheus_url="https://ops:s3cret@prom.example:9090/prom/?token=abc#x",
        logs_backend="loki",
        loki_url="http://loki.example:3100/",
    )
    tools = build_tools(settings)
    assert tools["query_metrics"].backend.model_dump() == {
        "name": "prometheus",
        "url": "https://prom.example:9090/prom",
    }
    assert tools["query_logs"].backend.label() == "loki (http://loki.example:3100)"
    assert tools["lookup_knowledge"].backend.label() == "knowledge-base"


def test_defaults_are_the_request_and_no_logs_and_demo_is_explicit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for key in DEMO_ENV:
        monkeypatch.delenv(key)
    fresh = ToolSettings()
    assert (fresh.metrics_backend, fresh.logs_backend) == ("request", "none")
    assert {t.backend.name for t in build_tools(fresh).values()} == {
        "request",
        "none",
        "knowledge-base",
    }
    demo = ToolSettings.demo()
    assert (demo.metrics_backend, demo.logs_backend) == ("demo", "demo")
    with pytest.raises(ValueError, match="logs_backend"):
        ToolSettings(logs_backend="postgres")
