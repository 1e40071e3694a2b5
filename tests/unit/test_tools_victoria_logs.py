"""The VictoriaLogs backend of ``query_logs``: LogsQL building and answer mapping (pure)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import pytest

from services.executor.tools import ToolSettings, build_tools
from services.executor.tools.base import RunContext, ToolBackendError
from services.executor.tools.logs import (
    LogQuery,
    QueryLogsParams,
    QueryLogsTool,
    alert_scope,
    to_log_query,
)
from services.executor.tools.refs import NO_EVIDENCE_PATH, log_text
from services.executor.tools.victoria_logs import (
    VictoriaLogsSearch,
    build_count,
    build_logsql,
    http_get,
    parse_time,
    quote,
    to_record,
)
from tracebound.errors import ConfigError
from tracebound.events import Alert

NOW = datetime(2026, 7, 8, 23, 10, 0, tzinfo=UTC)
URL = "http://vl.example:9428"


def _query(text: str = "order-service HikariCP", **kw: Any) -> LogQuery:
    base: dict[str, Any] = {
        "topic": "application-logs",
        "text": text,
        "services": ("order-service",),
        "level": None,
        "window_minutes": 60,
        "limit": 20,
    }
    return LogQuery(**{**base, **kw})


class Recorder:
    """A fake ``Fetch``: answers from ``pages`` in turn and records each call."""

    def __init__(self, *pages: bytes | Exception) -> None:
        self.pages = list(pages)
        self.calls: list[tuple[str, dict[str, str]]] = []

    def __call__(self, url: str, params: Mapping[str, str]) -> bytes:
        self.calls.append((url, dict(params)))
        page = self.pages.pop(0)
        if isinstance(page, Exception):
            raise page
        return page


def _lines(*entries: dict[str, Any]) -> bytes:
    return "".join(json.dumps(e) + "\n" for e in entries).encode()


def _entry(
    minute: int, msg: str = "HikariPool-1 - Connection is not available", **kw: str
) -> dict[str, Any]:
    return {
        "_time": f"2026-07-08T23:{minute:02d}:01.123456789Z",
        "_msg": msg,
        "_stream": '{service="order-service",topic="application-logs"}',
        "_stream_id": "0000",
        "topic": "application-logs",
        "service": "order-service",
        "level": "error",
        "pod": "order-7",
        **kw,
    }


def _tool(fetch: Recorder) -> QueryLogsTool:
    return QueryLogsTool(VictoriaLogsSearch(URL, 2, now=lambda: NOW, fetch=fetch), region="eu-1")


def test_quote_escapes_so_a_value_cannot_change_the_query() -> None:
    assert quote('a"b\\c\nd') == '"a\\"b\\\\c\\nd"'


def test_logsql_has_exact_fields_words_sort_and_limit() -> None:
    q = _query("order-service, HikariCP timeout.", level="ERROR", limit=5)
    assert build_logsql(q) == (
        '(topic:="application-logs" or topic:="") service:="order-service" level:i("ERROR") '
        '"HikariCP" "timeout" | sort by (_time desc) | limit 5'
    )
    assert build_count(q).endswith("| stats count() as total")


def test_logsql_takes_the_alert_scope() -> None:
    q = _query(
        "Connection", services=(), scope=(("service", "order-service"), ("namespace", "shop"))
    )
    assert build_logsql(q).startswith(
        '(topic:="application-logs" or topic:="") '
        'service:="order-service" namespace:="shop" "Connection"'
    )


def test_injection_stays_inside_a_string() -> None:
    q = _query('x" or * | delete', services=("a-service",))
    assert build_logsql(q) == (
        '(topic:="application-logs" or topic:="") service:="a-service" "x" "or" "*" "|" "delete" '
        "| sort by (_time desc) | limit 20"
    )
    assert build_logsql(_query("a\\b", services=())).split(" | ")[0].endswith('"a\\\\b"')


def test_alert_scope_keeps_only_labels_the_alerts_agree_on() -> None:
    alerts = (
        Alert(
            status="firing", labels={"service": "order-service", "namespace": "shop", "pod": "a"}
        ),
        Alert(
            status="firing", labels={"service": "order-service", "namespace": "shop", "pod": "b"}
        ),
        Alert(status="firing", labels={"service": "other-service", "namespace": "x"}),
    )
    assert alert_scope(alerts, ("order-service",)) == (
        ("service", "order-service"),
        ("namespace", "shop"),
    )
    assert alert_scope(alerts, ()) == ()  # two services, two namespaces: nothing shared
    assert alert_scope(alerts[:1], ()) == (
        ("service", "order-service"),
        ("namespace", "shop"),
        ("pod", "a"),
    )
    assert alert_scope(alerts, ("billing-service",)) == ()
    params = QueryLogsParams(query="HikariCP")
    assert to_log_query(params, alerts[:1]).scope[0] == ("service", "order-service")
    assert to_log_query(params).scope == ()


def test_parse_time_reads_nanoseconds_and_offsets() -> None:
    assert parse_time("2026-07-08T23:05:28.123456789Z") == datetime(
        2026, 7, 8, 23, 5, 28, 123456, tzinfo=UTC
    )
    assert parse_time("2026-07-08T23:05:28Z").second == 28
    assert parse_time("2026-07-09T01:05:28+02:00").hour == 23
    with pytest.raises(ToolBackendError):
        parse_time("yesterday")


def test_an_entry_maps_to_the_log_envelope() -> None:
    moment, record = to_record(_entry(5, component="HikariCP", namespace="shop", empty=""))
    assert moment.minute == 5
    assert record == {
        "timestamp": "2026-07-08 23:05:01",
        "level": "ERROR",
        "service": "order-service",
        "instance": "order-7",
        "message": "HikariPool-1 - Connection is not available",
        "metrics": {"component": "HikariCP", "namespace": "shop"},
    }
    assert log_text(record) == (
        "2026-07-08 23:05:01 ERROR order-service order-7 HikariPool-1 - Connection is not "
        "available; component=HikariCP, namespace=shop"
    )
    with pytest.raises(ToolBackendError):
        to_record({"_msg": "no time"})


def test_lines_become_log_items_oldest_first() -> None:
    fetch = Recorder(_lines(_entry(9), _entry(3), _entry(6)))
    outcome = _tool(fetch).run(QueryLogsParams(query="order-service HikariCP"), RunContext("r"))
    assert outcome.success and outcome.retrieval_layer == "victorialogs"
    logs = outcome.output["logs"]
    assert [r["timestamp"][-5:] for r in logs] == ["03:01", "06:01", "09:01"]
    assert outcome.output["total"] == 3 and outcome.output["region"] == "eu-1"
    refs = outcome.retrieval_details.evidence_refs
    assert [r.raw_path for r in refs] == ["$.logs[0]", "$.logs[1]", "$.logs[2]"]
    assert [r.text for r in refs] == [log_text(r) for r in logs]
    ((url, params),) = fetch.calls
    assert url == f"{URL}/select/logsql/query"
    assert params["start"] == "2026-07-08T22:10:00+00:00"
    assert params["end"] == "2026-07-08T23:10:00+00:00"
    assert params["limit"] == "20"
    assert params["query"].startswith(
        '(topic:="application-logs" or topic:="") service:="order-service"'
    )


def test_the_alert_scopes_the_query() -> None:
    fetch = Recorder(b"")
    alert = Alert(status="firing", labels={"service": "order-service", "namespace": "shop"})
    ctx = RunContext("r", alerts=(alert,))
    _tool(fetch).run(QueryLogsParams(query="Connection"), ctx)
    assert 'service:="order-service" namespace:="shop" "Connection"' in fetch.calls[0][1]["query"]


def test_a_full_page_counts_the_total() -> None:
    fetch = Recorder(_lines(_entry(9), _entry(8)), _lines({"total": "7"}))
    outcome = _tool(fetch).run(QueryLogsParams(query="order-service", limit=2), RunContext("r"))
    assert outcome.output["total"] == 7
    assert "showing the newest 2" in outcome.output["message"]
    assert fetch.calls[1][1]["query"].endswith("| stats count() as total")


def test_other_services_and_levels_are_dropped_again() -> None:
    fetch = Recorder(
        _lines(_entry(9), _entry(8, service="inventory-service"), _entry(7, level="info"))
    )
    params = QueryLogsParams(query="order-service", level="error")
    outcome = _tool(fetch).run(params, RunContext("r"))
    assert outcome.output["total"] == 1


def test_no_hits_is_no_evidence() -> None:
    outcome = _tool(Recorder(b"\n")).run(
        QueryLogsParams(query="order-service OOM"), RunContext("r")
    )
    assert outcome.success
    assert outcome.retrieval_details.evidence_status == "no_evidence"
    assert [r.raw_path for r in outcome.retrieval_details.evidence_refs] == [NO_EVIDENCE_PATH]


def test_two_services_send_nothing() -> None:
    fetch = Recorder()
    params = QueryLogsParams(query="order-service inventory-service")
    outcome = _tool(fetch).run(params, RunContext("r"))
    assert outcome.retrieval_details.evidence_status == "no_evidence" and fetch.calls == []


@pytest.mark.parametrize(
    "answer",
    [ToolBackendError("victorialogs: HTTP 400"), b"not json\n", b"[1]\n", _lines({"_msg": "x"})],
)
def test_failures_are_recorded_not_raised(answer: bytes | Exception) -> None:
    outcome = _tool(Recorder(answer)).run(QueryLogsParams(query="order-service"), RunContext("r"))
    assert not outcome.success
    assert outcome.retrieval_details.evidence_status == "failed"
    assert (outcome.error_message or "").startswith("victorialogs:")


def test_a_malformed_count_is_a_failure() -> None:
    fetch = Recorder(_lines(_entry(9)), _lines({"count": "x"}))
    outcome = _tool(fetch).run(QueryLogsParams(query="order-service", limit=1), RunContext("r"))
    assert outcome.retrieval_details.evidence_status == "failed"


def test_http_get_rejects_other_schemes_and_unreachable_hosts() -> None:
    with pytest.raises(ToolBackendError, match="unsupported URL"):
        http_get(1)("file:///etc/passwd", {})
    with pytest.raises(ToolBackendError, match="unreachable"):
        http_get(1)("http://127.0.0.1:9/select/logsql/query", {"query": "*"})


def test_settings_wire_the_backend_and_record_its_public_url() -> None:
    settings = ToolSettings(
        logs_backend="victorialogs", victorialogs_url="http://user:pw@vl.example:9428/?x=1"
    )
    tool = build_tools(settings)["query_logs"]
    assert tool.backend.name == "victorialogs"
    assert tool.backend.url == "http://vl.example:9428"
    with pytest.raises(ConfigError, match="TRACEBOUND_TOOLS_VICTORIALOGS_URL"):
        build_tools(ToolSettings(logs_backend="victorialogs"))
