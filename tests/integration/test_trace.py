"""The Trace API, the trace page in headless Chromium and ``tracebound trace``, end to end.

The five roles answer two questions, a projection process writes the read models
into a private schema, and a real ``python -m services.ingest`` server reads
them back. The page is checked the way a person sees it: Debian's Chromium
renders it headless, its DOM must carry the evidence, and its screenshot must be
a real picture. Chromium is installed by ``scripts/ensure-chromium.sh`` when it
is missing; if it still cannot be had the test fails with the reason rather than
being skipped, because an unchecked page is how a broken page ships.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from psycopg import sql
from psycopg.types.json import Jsonb

from projections import run_list, trace
from projections.migrate import migrate
from tests.support.browser import ensure_chromium, png_facts, run_chromium
from tests.support.ingest_process import ingest_server
from tests.support.openapi import schema_errors
from tests.support.pipeline import running_pipeline
from tests.support.projection import Projection, ProjectionFactory, topic_ends
from tests.support.stack import StackHandle
from tests.unit.test_trace_assemble import sample_rows
from tracebound.client import AnswerReader, new_request, publish

HIGH_CPU = "payment-service 当前是否有 HighCPUUsage 告警？"
HIKARI = "inventory-service 是否有 HikariCP 连接池耗尽日志？"


@pytest.fixture(scope="session")
def chromium() -> str:
    """Debian's chromium, installed once per session if missing (as root, with apt-get)."""
    return ensure_chromium()


def wait_answered(model: Projection, run_ids: list[str], timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while model.answered(run_ids) < len(run_ids):
        assert time.monotonic() < deadline, "the projection never showed the runs answered"
        time.sleep(0.3)


def test_trace_api_page_and_cli_replay_a_real_run(
    stack: StackHandle,
    tmp_path: Path,
    projection: ProjectionFactory,
    chromium: str,
) -> None:
    asked = [new_request(HIGH_CPU), new_request(HIKARI)]
    run_ids = [e.run_id for e in asked]
    model = projection(start=topic_ends(stack))
    reader = AnswerReader(stack.kafka)
    with running_pipeline(stack, tmp_path / "pipeline"):
        model.start()
        publish(stack.kafka, asked)
        answers = reader.wait_for(set(run_ids), timeout_s=180)
    reader.close()
    assert set(answers) == set(run_ids)
    wait_answered(model, run_ids)
    high_cpu, hikari = run_ids

    with (
        ingest_server(model.env(), tmp_path / "ingest.log") as url,
        httpx.Client(base_url=url, timeout=30, trust_env=False) as client,
    ):
        reply = client.get(f"/api/v1/runs/{high_cpu}/trace")
        assert reply.status_code == 200, reply.text
        found = reply.json()
        assert found["run"]["query"] == HIGH_CPU and found["run"]["status"] == "answered"
        [claim] = found["claims"]
        assert claim["claim_text"] and claim["claim_type"] == "observation"
        [binding] = claim["bindings"]
        assert re.fullmatch(r"\$\.alerts\[\d+\]", binding["raw_path"])
        assert isinstance(binding["source_invocation_id"], int)
        invocation = next(
            i
            for i in found["tool_invocations"]
            if i["source_invocation_id"] == binding["source_invocation_id"]
        )
        recorded = {r["raw_path"]: r["text"] for r in invocation["evidence_refs"]}
        assert binding["recorded_ref_text"] == recorded[binding["raw_path"]]
        assert binding["evidence_excerpt"] in binding["recorded_ref_text"]
        assert binding["gatekeeper"]["status"] == "pass"
        assert claim["gatekeeper"]["status"] == "pass"
        assert claim["verifier"]["status"] == "SUPPORTED" and claim["verifier"]["facts"]
        assert found["gatekeeper"]["status"] == "pass"
        assert found["gatekeeper"]["rule_set_version"]
        assert found["verifier"]["verdict"] == "PASS"
        answer = answers[high_cpu]
        assert found["answer"]["user_facing_answer"] == answer.user_facing_answer
        assert found["answer"]["guard"]["ok"] is True
        stages = [s["stage"] for s in found["timeline"]]
        assert stages[0] == "request" and stages[-1] == "answer"
        assert {"plan", "tools", "evidence", "gatekeeper", "verdict"} <= set(stages)

        negative = client.get(f"/api/v1/runs/{hikari}/trace").json()
        [neg_binding] = negative["claims"][0]["bindings"]
        assert neg_binding["raw_path"] == "$.no_evidence"
        assert neg_binding["recorded_ref_text"]

        # every real response holds to the schema the server publishes for it
        document = client.get("/openapi.json").json()
        served: list[tuple[str, Any]] = [("Trace", found), ("Trace", negative)]
        unknown = client.get(f"/api/v1/runs/{uuid.uuid4()}/trace")
        assert unknown.status_code == 404
        bad_filter = client.get("/api/v1/runs", params={"verdict": "maybe"})
        assert bad_filter.status_code == 400
        served += [("ErrorBody", unknown.json()), ("ErrorBody", bad_filter.json())]

        listed: set[str] = set()
        cursor: str | None = None
        while True:  # walk every page: both runs are listed exactly once
            params = {"verdict": "PASS", "limit": "1"} | ({"cursor": cursor} if cursor else {})
            page = client.get("/api/v1/runs", params=params).json()
            served.append(("RunList", page))
            ids = [r["run_id"] for r in page["runs"]]
            assert not listed & set(ids)
            listed.update(ids)
            assert {r["verdict"] for r in page["runs"]} <= {"PASS"}
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert set(run_ids) <= listed
        by_service = client.get("/api/v1/runs", params={"service": "payment-service"}).json()
        assert high_cpu in {r["run_id"] for r in by_service["runs"]}
        assert hikari not in {r["run_id"] for r in by_service["runs"]}
        served += [("RunList", by_service), ("RunList", client.get("/api/v1/runs").json())]
        for name, body in served:
            assert schema_errors(document, name, body) == [], (name, body)

        profile = tmp_path / "chromium-profile"
        shot = tmp_path / "trace.png"
        page_url = f"{url}/runs/{high_cpu}"
        html = run_chromium(chromium, profile, "--dump-dom", page_url)
        run_chromium(chromium, profile, f"--screenshot={shot}", page_url)
    assert claim["claim_text"] in html
    assert binding["raw_path"] in html
    assert binding["recorded_ref_text"] in html
    assert ">PASS<" in html and ">SUPPORTED<" in html
    assert "<script" not in html
    width, height, colours = png_facts(shot.read_bytes())
    assert width == 1280 and height > 0
    assert colours > 1, "the screenshot is a single colour"
    print(f"screenshot: {shot} ({width}x{height})")

    cli = subprocess.run(
        [sys.executable, "-m", "tracebound.cli", "trace", high_cpu, "--json"],
        env=model.env(),
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout) == found
    text = subprocess.run(
        [sys.executable, "-m", "tracebound.cli", "trace", high_cpu],
        env=model.env(),
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert text.returncode == 0 and "[SUPPORTED] claim-1" in text.stdout
    missing = subprocess.run(
        [sys.executable, "-m", "tracebound.cli", "trace", "no-such-run"],
        env=model.env(),
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert missing.returncode == 1
    assert missing.stderr == "tracebound: no run no-such-run in the read model\n"


def _insert(conn: psycopg.Connection[Any], table: str, row: dict[str, Any]) -> None:
    columns = list(row)
    values = [Jsonb(v) if isinstance(v, dict | list) else v for v in row.values()]
    conn.execute(
        sql.SQL("INSERT INTO {} ({}) VALUES ({})").format(
            sql.Identifier(table),
            sql.SQL(", ").join(map(sql.Identifier, columns)),
            sql.SQL(", ").join(sql.Placeholder() for _ in columns),
        ),
        values,
    )


def test_trace_and_listing_from_inserted_rows(projection: ProjectionFactory) -> None:
    schema = projection()
    with schema.conn() as conn:
        migrate(conn)
        run, invocations, steps = sample_rows()
        _insert(conn, "diagnosis_run", run)
        for inv in invocations:
            _insert(conn, "tool_invocation", inv | {"event_id": f"ev-{inv['id']}"})
        for step in steps:
            _insert(
                conn,
                "agent_step",
                {"model_input": "i", "model_output": "o"} | step | {"run_id": "run-1"},
            )
        base = run["requested_at"]
        alert = {"labels": {"service": "billing-service", "alertname": "HighCPUUsage"}}
        for i in range(5):
            _insert(
                conn,
                "diagnosis_run",
                {
                    "run_id": f"other-{i}",
                    "status": "answered" if i % 2 else "verifying",
                    "verdict": "PASS" if i % 2 else None,
                    "query": "Diagnose firing alerts",
                    "request": {"mode": "AIOPS", "alerts": [alert] if i == 3 else []},
                    "requested_at": base + timedelta(minutes=i + 1),
                    "merge_state": {},
                },
            )
        _insert(
            conn, "diagnosis_run", {"run_id": "no-request", "status": "planned", "merge_state": {}}
        )

        assert trace.build_trace(conn, "run-1") == trace.assemble_trace(run, invocations, steps)
        assert trace.build_trace(conn, "missing") is None

        seen: list[str] = []
        cursor = None
        while True:
            page = run_list.list_runs(conn, limit=2, cursor=cursor)
            seen += [r.run_id for r in page.runs]
            cursor = page.next_cursor
            if cursor is None:
                break
        assert seen == [*(f"other-{i}" for i in range(4, -1, -1)), "run-1", "no-request"]
        assert [r.run_id for r in run_list.list_runs(conn, verdict="PASS").runs] == [
            "other-3",
            "other-1",
        ]
        assert [r.run_id for r in run_list.list_runs(conn, status="verifying").runs] == [
            "other-4",
            "other-2",
            "other-0",
        ]
        window = run_list.list_runs(
            conn, since=base + timedelta(minutes=2), until=base + timedelta(minutes=4)
        )
        assert [r.run_id for r in window.runs] == ["other-2", "other-1"]
        by_label = run_list.list_runs(conn, service="billing-service").runs
        assert [r.run_id for r in by_label] == ["other-3"]
        by_query = run_list.list_runs(conn, service="PAYMENT-SERVICE").runs
        assert [r.run_id for r in by_query] == ["run-1"]
        assert run_list.list_runs(conn, service="payment").runs == []
        later = datetime.now(UTC) + timedelta(days=1)
        assert run_list.list_runs(conn, since=later).document() == {"runs": [], "next_cursor": None}
