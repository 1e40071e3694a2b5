"""``query_logs`` against a real VictoriaLogs server (built by scripts/ensure-victoria-logs.sh).

Twenty log lines of two services go in through the JSON-lines ingestion API; the
real tool, wired by ``build_tools`` from the settings, must return only the
alerting service's lines of its namespace within the window, each as a
``$.logs[i]`` ref with its text.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from services.executor import log_shapes
from services.executor.claim_templates import templates
from services.executor.tools import RunContext, ToolSettings, build_tools
from services.executor.tools.logs import QueryLogsParams
from services.executor.tools.refs import NO_EVIDENCE_PATH, log_text
from services.verifier.structure import check_claim
from tests.support.victoria_logs import RunningVictoriaLogs, ensure_built, victoria_logs
from tracebound.events import Alert, ExecutionPlan, ToolInvocation

NOW = datetime.now(UTC).replace(microsecond=0)
ALERT = Alert(status="firing", labels={"service": "order-service", "namespace": "shop"})
OUT_OF_POOL = "HikariPool-1 - Connection is not available, request timed out after 30000ms"


def _line(minutes_ago: int, service: str, message: str, **fields: str) -> dict[str, Any]:
    moment = NOW - timedelta(minutes=minutes_ago)  # NOW is set again when the server starts
    return {
        "_time": moment.strftime("%Y-%m-%dT%H:%M:%S.000000123Z"),
        "_msg": message,
        "topic": "application-logs",
        "service": service,
        "namespace": "shop",
        **fields,
    }


def _hits() -> list[dict[str, Any]]:
    """6 hits: order-service in namespace shop, within the last hour, about the pool."""
    return [
        _line(
            m,
            "order-service",
            OUT_OF_POOL,
            level="error",
            pod=f"order-{m % 2}",
            component="HikariCP",
        )
        for m in (50, 40, 30, 20, 10, 5)
    ]


def _lines() -> list[dict[str, Any]]:
    return [
        *_hits(),
        # the same text outside the 60-minute window
        _line(120, "order-service", OUT_OF_POOL, level="error", pod="order-0"),
        _line(150, "order-service", OUT_OF_POOL, level="error", pod="order-1"),
        # the same service and text in another namespace than the alert's
        _line(10, "order-service", OUT_OF_POOL, level="error", pod="order-9", namespace="staging"),
        # the same service, other words
        *(
            _line(m, "order-service", "order placed", level="info", pod="order-0")
            for m in (45, 25, 15)
        ),
        # the other service, same words
        *(
            _line(m, "inventory-service", "Connection is not available in pool", level="warn")
            for m in (55, 45, 35, 25, 15, 12, 8, 3)
        ),
    ]


HITS = _hits()
LINES = _lines()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningVictoriaLogs]:
    built = ensure_built()
    if isinstance(built, str):
        pytest.skip(f"victoria-logs could not be built: {built}")
    folder: Path = tmp_path_factory.mktemp("victoria-logs")
    global NOW, HITS, LINES  # the lines are dated from when they are sent
    NOW = datetime.now(UTC).replace(microsecond=0)
    HITS, LINES = _hits(), _lines()
    with victoria_logs(built, folder) as running:
        running.ingest(LINES)
        yield running


def _run(url: str, alerts: tuple[Alert, ...] = (ALERT,), **params: Any) -> Any:
    settings = ToolSettings(logs_backend="victorialogs", victorialogs_url=url)
    tool = build_tools(settings)["query_logs"]
    assert tool.backend.name == "victorialogs" and tool.backend.url == url
    ctx = RunContext(run_id="run-victoria-logs", alerts=alerts)
    return tool.run(QueryLogsParams(**params), ctx)


def test_only_the_alerting_service_in_the_window_comes_back(server: RunningVictoriaLogs) -> None:
    assert len(LINES) == 20
    outcome = _run(server.url, query="order-service Connection not available")
    assert outcome.success and outcome.retrieval_layer == "victorialogs"
    details = outcome.retrieval_details
    assert details.evidence_status == "supported"
    logs = outcome.output["logs"]
    assert outcome.output["total"] == len(HITS) == len(logs)
    assert [ref.raw_path for ref in details.evidence_refs] == [f"$.logs[{i}]" for i in range(6)]
    for record, ref in zip(logs, details.evidence_refs, strict=True):
        assert ref.text == log_text(record)
        assert record["service"] == "order-service" and record["level"] == "ERROR"
        assert record["message"] == OUT_OF_POOL and OUT_OF_POOL in ref.text
        assert record["metrics"]["namespace"] == "shop"
        assert record["metrics"]["component"] == "HikariCP"
        assert record["instance"] in {"order-0", "order-1"}
    want = [
        (NOW - timedelta(minutes=m)).strftime("%Y-%m-%d %H:%M:%S") for m in (50, 40, 30, 20, 10, 5)
    ]
    assert [record["timestamp"] for record in logs] == want


def test_the_limit_keeps_the_newest_and_counts_all(server: RunningVictoriaLogs) -> None:
    outcome = _run(server.url, query="order-service Connection", limit=2)
    logs = outcome.output["logs"]
    assert [r["timestamp"] for r in logs] == [
        (NOW - timedelta(minutes=m)).strftime("%Y-%m-%d %H:%M:%S") for m in (10, 5)
    ]
    assert outcome.output["total"] == 6
    assert "showing the newest 2" in outcome.output["message"]


def test_without_the_alert_the_other_namespace_is_found_too(server: RunningVictoriaLogs) -> None:
    outcome = _run(server.url, alerts=(), query="order-service Connection")
    assert outcome.output["total"] == 7
    namespaces = {record["metrics"]["namespace"] for record in outcome.output["logs"]}
    assert namespaces == {"shop", "staging"}


def test_a_query_without_hits_is_no_evidence(server: RunningVictoriaLogs) -> None:
    outcome = _run(server.url, query="order-service OutOfMemoryError")
    assert outcome.success
    details = outcome.retrieval_details
    assert details.evidence_status == "no_evidence"
    assert [ref.raw_path for ref in details.evidence_refs] == [NO_EVIDENCE_PATH]
    assert outcome.output["logs"] == [] and outcome.output["total"] == 0


def test_a_stopped_server_is_a_failed_outcome(tmp_path: Path) -> None:
    built = ensure_built()
    if isinstance(built, str):
        pytest.skip(f"victoria-logs could not be built: {built}")
    with victoria_logs(built, tmp_path) as running:
        url = running.url
        running.stop()
        outcome = _run(url, query="order-service Connection")
    assert not outcome.success
    assert outcome.retrieval_details.evidence_status == "failed"
    assert outcome.retrieval_details.evidence_refs == ()
    assert (outcome.error_message or "").startswith("victorialogs:")


def test_shapes_count_the_matches_by_message_and_their_claim_passes(
    server: RunningVictoriaLogs,
) -> None:
    outcome = _run(server.url, query="order-service Connection not available", shapes=True)
    [shape] = outcome.output["shapes"]
    assert shape["count"] == len(HITS) and shape["level"] == "ERROR"
    # each run of digits is <N>, so one pool error with any pool number or timeout counts once
    assert shape["message"] == OUT_OF_POOL.replace("1", "<N>").replace("30000", "<N>")
    first, last = ((NOW - timedelta(minutes=m)).strftime("%Y-%m-%d %H:%M:%S") for m in (50, 5))
    assert (shape["first"], shape["last"]) == (first, last)
    [ref] = [r for r in outcome.retrieval_details.evidence_refs if r.raw_path == "$.shapes[0]"]
    assert ref.text.startswith(f'order-service logged 6 ERROR lines like "{shape["message"]}"')
    inv = ToolInvocation(
        source_invocation_id=1,
        tool_name="query_logs",
        input_params={},
        output=outcome.output,
        retrieval_details=outcome.retrieval_details,
        duration_ms=1,
        success=True,
    )
    [claim] = log_shapes.stated([inv], "en", ExecutionPlan(calls=()), templates())
    text = claim["claim_text"]
    assert all(r.found and not r.conflict for r in check_claim(text, [ref.text])), text
    edited = check_claim(text.replace(" 6 ", " 9 "), [ref.text])
    assert any(not r.found or r.conflict for r in edited)
