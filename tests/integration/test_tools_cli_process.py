"""``tracebound tool`` as a process against the real database: the acceptance commands."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from services.executor.tools.settings import DEMO_ENV
from tests.support.cli import run_cli
from tests.support.stack import StackHandle


def tool(stack: StackHandle, *args: str) -> subprocess.CompletedProcess[str]:
    env = stack.env()
    for key in list(env):
        if key.startswith("TRACEBOUND_TOOLS_"):
            del env[key]  # whatever the caller's shell says: the demo backends, asked for
    env.update(DEMO_ENV)
    return run_cli("tool", *args, env=env)


def json_tool(stack: StackHandle, *args: str) -> dict[str, Any]:
    done = tool(stack, *args, "--json")
    assert done.returncode == 0, done.stderr
    record: dict[str, Any] = json.loads(done.stdout)
    return record


def test_hikaricp_logs(stack: StackHandle) -> None:
    record = json_tool(
        stack, "query_logs", "--param", "log_topic=application-logs", "--param", "query=HikariCP"
    )
    assert record["success"] is True and record["retrieval_layer"] == "postgres"
    logs = record["output"]["logs"]
    refs = record["retrieval_details"]["evidence_refs"]
    hits = [
        i
        for i, r in enumerate(logs)
        if r["service"] == "order-service" and "Connection is not available" in r["message"]
    ]
    assert hits
    for i in hits:
        assert refs[i]["raw_path"] == f"$.logs[{i}]"
        assert logs[i]["message"] in refs[i]["text"]
        assert "active=50/50" in refs[i]["text"]
    assert record["input_params"]["window_minutes"] == 60
    assert isinstance(record["duration_ms"], int)


def test_inventory_service_hikaricp_is_no_evidence(stack: StackHandle) -> None:
    record = json_tool(
        stack,
        "query_logs",
        "--param",
        "log_topic=application-logs",
        "--param",
        "query=inventory-service HikariCP",
    )
    details = record["retrieval_details"]
    assert details["evidence_status"] == "no_evidence"
    assert [r["raw_path"] for r in details["evidence_refs"]] == ["$.no_evidence"]
    assert "query=inventory-service HikariCP" in details["evidence_refs"][0]["text"]


def test_query_metrics_three_firing_alerts(stack: StackHandle) -> None:
    record = json_tool(stack, "query_metrics")
    assert [a["alert_name"] for a in record["output"]["alerts"]] == [
        "HighCPUUsage",
        "HighMemoryUsage",
        "SlowResponse",
    ]
    assert {a["state"] for a in record["output"]["alerts"]} == {"firing"}


def test_lookup_knowledge_summary(stack: StackHandle) -> None:
    done = tool(
        stack,
        "lookup_knowledge",
        "--param",
        "query=HikariCP connection pool",
        "--param",
        "alert_name=HikariPoolExhausted",
        "--param",
        "top_k=2",
    )
    assert done.returncode == 0, done.stderr
    assert "evidence_status: supported" in done.stdout
    assert "l0_match_count: 1" in done.stdout
    assert "$.evidence_blocks[0]  MySQL connection pool exhaustion (HikariCP) / " in done.stdout


def test_invalid_value_exits_2(stack: StackHandle) -> None:
    done = tool(stack, "query_logs", "--param", "query=x", "--param", "window_minutes=0")
    assert done.returncode == 2
    assert "window_minutes" in done.stderr
