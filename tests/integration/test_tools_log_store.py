"""query_logs on the PostgreSQL log store (real database, demo records)."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta

import psycopg
import pytest

from services.executor.tools import QueryLogsParams, RunContext, ToolOutcome, ToolSettings
from services.executor.tools.log_store import PostgresLogStore
from services.executor.tools.logs import QueryLogsTool
from tests.support.stack import StackHandle
from tracebound.errors import TransientError

DEMO_RECORDS = len(json.loads((ToolSettings().demo_data_dir / "logs.json").read_text())["logs"])


SETTINGS = ToolSettings()
NOW = SETTINGS.demo_now


def store(stack: StackHandle, now: datetime = NOW) -> PostgresLogStore:
    return PostgresLogStore(
        stack.postgres.dsn.get_secret_value(), lambda: now, SETTINGS.demo_data_dir
    )


@pytest.fixture(scope="module")
def tool(stack: StackHandle) -> QueryLogsTool:
    return QueryLogsTool(store(stack))


def run(tool: QueryLogsTool, **params: object) -> ToolOutcome:
    return tool.run(QueryLogsParams.model_validate(params), RunContext("it"))


def test_hikaricp_returns_the_order_service_pool_exhaustion(tool: QueryLogsTool) -> None:
    outcome = run(tool, log_topic="application-logs", query="HikariCP")
    details = outcome.retrieval_details
    assert outcome.success and outcome.retrieval_layer == "postgres"
    assert details.evidence_status == "supported"
    logs = outcome.output["logs"]
    assert logs and {r["service"] for r in logs} == {"order-service"}
    assert outcome.output["total"] == len(logs)
    index = next(
        i
        for i, r in enumerate(logs)
        if r["timestamp"] == "2026-07-08 23:05:28" and "Connection is not available" in r["message"]
    )
    ref = details.evidence_refs[index]
    assert ref.raw_path == f"$.logs[{index}]"
    assert ref.text.startswith(
        "2026-07-08 23:05:28 ERROR order-service pod-order-service-5c9d7b8f4-q7n2p "
        "HikariPool-1 - Connection is not available, request timed out after 30000ms; "
        "active=50/50, waiting=23"
    )
    assert len(details.evidence_refs) == len(logs)
    assert [r["timestamp"] for r in logs] == sorted(r["timestamp"] for r in logs)


def test_shapes_count_the_matches_by_message(tool: QueryLogsTool) -> None:
    outcome = run(tool, log_topic="application-logs", query="HikariCP", shapes=True)
    shapes = outcome.output["shapes"]
    logs = outcome.output["logs"]
    assert shapes and sum(s["count"] for s in shapes) <= outcome.output["total"]
    counts = [s["count"] for s in shapes]
    assert counts == sorted(counts, reverse=True)
    top = shapes[0]
    # each run of digits is <N>: the lines of one message shape and level counted together
    like = [
        r
        for r in logs
        if re.sub(r"[0-9]+", "<N>", r["message"]) == top["message"]
        and r["level"].upper() == top["level"]
    ]
    assert top["count"] == len(like) and "<N>" in top["message"]
    assert top["first"] == min(r["timestamp"] for r in like)
    paths = [r.raw_path for r in outcome.retrieval_details.evidence_refs]
    assert paths[len(logs) :] == [f"$.shapes[{i}]" for i in range(len(shapes))]


def test_inventory_service_hikaricp_is_no_evidence(tool: QueryLogsTool) -> None:
    outcome = run(tool, log_topic="application-logs", query="inventory-service HikariCP")
    details = outcome.retrieval_details
    assert outcome.success
    assert details.evidence_status == "no_evidence"
    assert [(r.raw_path, r.text) for r in details.evidence_refs] == [
        (
            "$.no_evidence",
            "query_logs returned no evidence; evidence_status=no_evidence; "
            "query=inventory-service HikariCP; topic=application-logs; total=0; "
            "message=no matching logs",
        )
    ]
    assert outcome.output["logs"] == [] and outcome.output["total"] == 0


def test_service_names_must_match_exactly(tool: QueryLogsTool) -> None:
    assert run(tool, query="order-service HikariCP").output["total"] > 0
    assert run(tool, query="HikariCP", service="order-service").output["total"] > 0
    assert run(tool, query="HikariCP", service="payment-service").output["total"] == 0
    # two different services can never both equal one record's service
    assert run(tool, query="order-service user-service timeout").output["total"] == 0


def test_topics_are_separate(tool: QueryLogsTool) -> None:
    events = run(tool, log_topic="system-events", query="OOMKilled", service="order-service")
    assert events.output["total"] == 3
    texts = [r.text for r in events.retrieval_details.evidence_refs]
    assert any("exit code 137" in t and "restart_count=3" in t for t in texts)
    slow = run(tool, log_topic="database-slow-query", query="orders full scan")
    assert any("Query_time: 8.7s" in r["message"] for r in slow.output["logs"])
    assert run(tool, log_topic="system-metrics", query="OOMKilled").output["total"] == 0


def test_level_filter_and_aliases(tool: QueryLogsTool) -> None:
    errors = run(tool, query="HikariCP", level="error")
    assert {r["level"] for r in errors.output["logs"]} == {"ERROR"}
    warns = run(tool, query="HikariCP", level="WARNING")
    assert warns.output["logs"] and {r["level"] for r in warns.output["logs"]} == {"WARN"}


def test_window_is_relative_to_the_demo_clock(tool: QueryLogsTool) -> None:
    query = {"log_topic": "system-events", "query": "Deployment order-service"}
    assert run(tool, **query).output["total"] == 0  # 90 minutes ago, default window 60
    found = run(tool, **query, window_minutes=120)
    assert found.output["logs"][0]["timestamp"] == "2026-07-08 21:40:00"


def test_limit_keeps_the_newest_and_reports_the_total(tool: QueryLogsTool) -> None:
    outcome = run(tool, query="HikariCP", limit=2)
    assert outcome.output["total"] > 2
    assert [r["timestamp"] for r in outcome.output["logs"]] == [
        "2026-07-08 23:05:51",
        "2026-07-08 23:09:10",
    ]
    assert "showing the newest 2" in outcome.output["message"]


def test_query_text_is_only_ever_a_value(tool: QueryLogsTool) -> None:
    nasty = "x'); DROP TABLE tb_log_record; --"
    assert run(tool, query=nasty).retrieval_details.evidence_status == "no_evidence"
    assert run(tool, query="HikariCP").output["total"] > 0
    assert run(tool, query="!!! & | :*").retrieval_details.evidence_status == "no_evidence"


def test_loading_is_idempotent_and_follows_the_content_hash(stack: StackHandle) -> None:
    dsn = stack.postgres.dsn.get_secret_value()
    with psycopg.connect(dsn) as conn:
        assert store(stack).ensure_ready(conn) in (True, False)
        assert store(stack).ensure_ready(conn) is False  # a fresh process: same hash, no reload
        count = conn.execute("SELECT count(*) FROM tb_log_record WHERE origin = 'demo'").fetchone()
        assert count is not None and count[0] == DEMO_RECORDS
    moved = NOW + timedelta(days=1)
    later = store(stack, moved)
    try:
        with psycopg.connect(dsn) as conn:
            assert later.ensure_ready(conn) is True  # clock moved: every timestamp changed
        outcome = QueryLogsTool(later).run(QueryLogsParams(query="HikariCP"), RunContext("it"))
        assert outcome.output["logs"][-1]["timestamp"] == "2026-07-09 23:09:10"
    finally:
        with psycopg.connect(dsn) as conn:
            assert store(stack).ensure_ready(conn) is True
    with psycopg.connect(dsn) as conn:
        count = conn.execute("SELECT count(*) FROM tb_log_record WHERE origin = 'demo'").fetchone()
        assert count is not None and count[0] == DEMO_RECORDS


def test_records_of_other_origins_survive_a_reload(stack: StackHandle) -> None:
    dsn = stack.postgres.dsn.get_secret_value()
    with psycopg.connect(dsn) as conn:
        store(stack).ensure_ready(conn)
        conn.execute(
            "INSERT INTO tb_log_record (origin, topic, ts, level, service, instance, message) "
            "VALUES (NULL, 'application-logs', %s, 'ERROR', 'billing-service', 'b-0', "
            "'ledger write failed')",
            (NOW - timedelta(minutes=1),),
        )
    try:
        later = store(stack, NOW + timedelta(hours=1))
        with psycopg.connect(dsn) as conn:
            later.ensure_ready(conn)
        tool = QueryLogsTool(store(stack))
        outcome = tool.run(QueryLogsParams(query="billing-service ledger"), RunContext("it"))
        assert outcome.output["total"] == 1
    finally:
        with psycopg.connect(dsn) as conn:
            conn.execute("DELETE FROM tb_log_record WHERE service = 'billing-service'")
            store(stack).ensure_ready(conn)


def test_unreachable_database_is_transient(stack: StackHandle) -> None:
    from tests.support.http_fixtures import closed_port_url

    port = closed_port_url().rsplit(":", 1)[1]
    dead = PostgresLogStore(f"postgresql://tracebound@127.0.0.1:{port}/x", lambda: NOW, None)
    with pytest.raises(TransientError):
        QueryLogsTool(dead).run(QueryLogsParams(query="x"), RunContext("it"))


def test_settings_dsn_reaches_the_store(stack: StackHandle) -> None:
    settings = ToolSettings.model_validate({"postgres": stack.postgres})
    assert settings.dsn == stack.postgres.dsn.get_secret_value()


def test_a_dropped_table_heals_itself(stack: StackHandle) -> None:
    logs = store(stack)
    dsn = stack.postgres.dsn.get_secret_value()
    with psycopg.connect(dsn) as conn:
        logs.ensure_ready(conn)
        conn.execute("DROP TABLE tb_log_record")
    outcome = QueryLogsTool(logs).run(QueryLogsParams(query="HikariCP"), RunContext("it"))
    assert outcome.output["total"] > 0
    with psycopg.connect(dsn) as conn:
        assert store(stack).ensure_ready(conn) is False
