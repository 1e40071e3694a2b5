"""Read models on the real broker and database: contents, SIGKILL mid-stream, rebuild.

Every test projects into a schema of its own (``search_path`` through the DSN) with
consumer groups of its own, so it never shares rows or partitions with another
test or with the stack's projection process.
"""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from pathlib import Path

import psycopg
import pytest
from psycopg.rows import dict_row

from projections.migrate import migrate
from projections.rebuild import status
from tests.support.pipeline import running_pipeline
from tests.support.projection import ProjectionFactory, differences, topic_ends
from tests.support.stack import StackHandle
from tracebound.client import AnswerReader, new_request, publish
from tracebound.errors import ConfigError
from tracebound.events import (
    AgentStep,
    Alert,
    DeadLetter,
    DiagnosisRequest,
    DiagnosisRequested,
    Event,
)
from tracebound.events import Producer as ProducerRef
from tracebound.events.base import utcnow
from tracebound.settings import PostgresSettings

QUESTIONS = (
    "payment-service 当前是否有 HighCPUUsage 告警？",
    "Are there HikariCP pool exhaustion logs for inventory-service?",
    "Why is order-service using so much memory? Please analyse it.",
    "user-service 是否有 SlowResponse 告警？",
)
VERIFIER_FIELDS = (
    "verdict",
    "groundedness_score",
    "critical_fact_count",
    "claim_checks",
    "facts_checked",
    "rationale",
    "round",
    "traceability_version",
    "executor_output_parse_status",
    "executor_structured_output",
    "gatekeeper_result",
    "composer_output",
    "tool_trace_summary",
    "prompt_audit",
)


def aiops_request() -> DiagnosisRequested:
    alert = Alert(
        status="firing",
        labels={"alertname": "HighCPUUsage", "service": "payment-service", "severity": "warning"},
        annotations={"summary": "CPU usage above 80%"},
        startsAt="2026-07-08T22:40:00Z",
        fingerprint="f1",
    )
    return DiagnosisRequested(
        run_id=str(uuid.uuid4()),
        producer=ProducerRef(service="test"),
        request=DiagnosisRequest(
            mode="AIOPS",
            query="Diagnose firing alerts: HighCPUUsage on payment-service",
            alerts=(alert,),
            requested_by="alertmanager:test",
            requested_at=utcnow(),
        ),
    )


def test_projected_runs_carry_the_whole_trace(
    stack: StackHandle, tmp_path: Path, projection: ProjectionFactory
) -> None:
    asked: list[Event] = [new_request(q, session_id="sess-1") for q in QUESTIONS]
    asked.append(aiops_request())
    run_ids = [e.run_id for e in asked]
    model = projection(start=topic_ends(stack))
    reader = AnswerReader(stack.kafka)
    with running_pipeline(stack, tmp_path / "pipeline"):
        model.start()
        publish(stack.kafka, asked)
        answers = reader.wait_for(set(run_ids), timeout_s=180)
    reader.close()
    assert set(answers) == set(run_ids)
    # rules mode makes no model calls: one recorded step shows how steps are projected
    step = AgentStep(
        run_id=run_ids[0],
        session_id="sess-1",
        producer=ProducerRef(service="test"),
        agent_name="chat_executor",
        step_index=0,
        model_input="summary of the input",
        model_output="summary of the output",
        has_tool_call=True,
        duration_ms=12,
        token_count=42,
        prompt_tokens=30,
        completion_tokens=12,
        model="test-model",
        prompt_version="chat-executor-v2",
        finish_reason="tool_calls",
    )
    publish(stack.kafka, [step])
    model.wait_caught_up()
    assert model.terminate() == 0, model.log.read_text()
    with model.conn() as conn, conn.cursor(row_factory=dict_row) as cur:
        cur.execute("SELECT * FROM diagnosis_run WHERE run_id = ANY(%s)", (run_ids,))
        rows = {r["run_id"]: r for r in cur.fetchall()}
        cur.execute("SELECT * FROM tool_invocation WHERE run_id = ANY(%s)", (run_ids,))
        invocations = cur.fetchall()
        cur.execute("SELECT * FROM agent_step WHERE run_id = ANY(%s)", (run_ids,))
        steps = cur.fetchall()
    assert set(rows) == set(run_ids)
    for run_id, row in rows.items():
        answer = answers[run_id]
        assert row["status"] == "answered" and row["final_status"] == answer.final_status
        assert row["verdict"] == answer.verdict and row["latency_ms"] == answer.latency_ms
        assert row["final_answer"]["user_facing_answer"] == answer.user_facing_answer
        assert row["last_event_id"] == answer.event_id
        assert row["plan"]["selection_reason"] and row["requested_at"] is not None
        assert {"request", "plan", "tools", "evidence", "gatekeeper", "verdict", "answer"} <= set(
            row["timings"]
        )
        evaluation = row["self_evaluation"]["verifier_evaluation"]
        missing = [f for f in VERIFIER_FIELDS if f not in evaluation]
        assert not missing, missing
        assert evaluation["traceability_version"] == "v1"
        assert evaluation["gatekeeper_result"]["rule_set_version"]
        assert evaluation["composer_output"]["user_facing_answer"] == answer.user_facing_answer
        assert evaluation["prompt_audit"]["version"]
        assert evaluation["tool_trace_summary"]
    aiops = rows[asked[-1].run_id]
    assert aiops["mode"] == "AIOPS" and "aiops_rule_evaluation" in aiops["self_evaluation"]
    assert rows[run_ids[0]]["session_id"] == "sess-1"
    assert invocations and {r["run_id"] for r in invocations} == set(run_ids)
    for inv in invocations:
        refs = inv["retrieval_details"]["evidence_refs"]
        # a call that could not run (no Prometheus here) has nothing to cite
        assert refs or inv["success"] is False
        assert all(ref["raw_path"] and ref["text"] for ref in refs)
        assert inv["event_id"] and inv["tool_name"] and inv["output"] is not None
    negative = rows[run_ids[1]]["self_evaluation"]["verifier_evaluation"]
    claims = negative["executor_structured_output"]["claims"]
    assert claims[0]["evidence_bindings"][0]["raw_path"] == "$.no_evidence"
    [step_row] = steps
    assert step_row["event_id"] == step.event_id and step_row["token_count"] == 42
    assert step_row["agent_name"] == "chat_executor" and step_row["has_tool_call"] is True
    assert step_row["finish_reason"] == "tool_calls"
    first = rows[run_ids[0]]
    assert (first["token_count"], first["prompt_tokens"], first["completion_tokens"]) == (
        42,
        30,
        12,
    )
    assert first["status"] == "answered", "a late step does not reopen an answered run"


def test_sigkill_mid_stream_equals_an_uninterrupted_run_and_a_rebuild(
    stack: StackHandle, tmp_path: Path, projection: ProjectionFactory
) -> None:
    asked = [new_request(QUESTIONS[i % len(QUESTIONS)]) for i in range(200)]
    run_ids = [e.run_id for e in asked]
    live = projection()
    reader = AnswerReader(stack.kafka)
    kills: list[int] = []
    live.start()
    live.wait_caught_up()  # past the history of earlier runs: the kills hit our stream
    with running_pipeline(stack, tmp_path / "pipeline"):
        # A stream, not one burst, and the kills are timed by the stream itself: each
        # comes while requests are still being published, whatever the machine's speed.
        for chunk, start in enumerate(range(0, len(asked), 10)):
            publish(stack.kafka, list(asked[start : start + 10]))
            time.sleep(0.4)
            if chunk in (5, 12):
                deadline = time.monotonic() + 60  # something of ours projected first
                while live.answered(run_ids, None) <= len(kills) and time.monotonic() < deadline:
                    time.sleep(0.05)
                kills.append(live.answered(run_ids, None))
                live.kill()
                live.start()
        answers = reader.wait_for(set(run_ids), timeout_s=300)
    reader.close()
    assert set(answers) == set(run_ids)
    print(f"runs in the projection at each SIGKILL: {kills}")
    assert min(kills) > 0 and max(kills) < len(run_ids), f"kills not mid-stream: {kills}"
    live.wait_caught_up()
    assert live.terminate() == 0, live.log.read_text()
    after_kills = live.snapshot()

    calm = projection()
    calm.start()
    calm.wait_caught_up()
    assert calm.terminate() == 0, calm.log.read_text()
    uninterrupted = calm.snapshot()

    ours = [r for r in after_kills["diagnosis_run"] if r["run_id"] in set(run_ids)]
    assert len(ours) == len(run_ids) and {r["status"] for r in ours} == {"answered"}
    assert not differences(after_kills, uninterrupted), differences(after_kills, uninterrupted)

    with live.conn() as conn:
        oid_before = conn.execute("SELECT 'diagnosis_run'::regclass::oid").fetchone()
    rebuilt = subprocess.run(
        [sys.executable, "-m", "tracebound.cli", "projections", "rebuild", "--json"],
        env=live.env(),
        capture_output=True,
        check=False,
        timeout=600,
    )
    assert rebuilt.returncode == 0, rebuilt.stderr.decode()
    assert b"events/s" in rebuilt.stderr
    with live.conn() as conn:
        oid_after = conn.execute("SELECT 'diagnosis_run'::regclass::oid").fetchone()
        lag = sum(m["lag"] for m in status(conn, stack.kafka))
        indexes = {
            r[0]
            for r in conn.execute(
                "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()"
            ).fetchall()
        }
    assert oid_before != oid_after, "the model was rebuilt into a new table"
    assert lag == 0, "checkpoints are the rebuild's end offsets"
    assert "diagnosis_run_status_idx" in indexes and "diagnosis_run_pkey" in indexes
    assert not any("__rebuild" in name for name in indexes)
    swapped = live.snapshot()
    assert not differences(swapped, uninterrupted), differences(swapped, uninterrupted)


def test_replicas_share_the_partitions_and_write_what_one_process_writes(
    stack: StackHandle, tmp_path: Path, projection: ProjectionFactory
) -> None:
    """Two processes of one deployment (``up --replicas projections=2``), one run worker
    each: each projects its partitions; one stops mid-stream and its partitions move to
    the other, then it comes back. The rows are those one process writes alone."""
    asked = [new_request(QUESTIONS[i % len(QUESTIONS)]) for i in range(60)]
    run_ids = [e.run_id for e in asked]
    first = projection(start=topic_ends(stack))
    first.settings["TRACEBOUND_PROJECTIONS_RUN_WORKERS"] = "1"
    second = first.replica()
    first.start()
    second.start()
    first.wait_caught_up()
    for replica in (first, second):  # both members of the group before the stream
        replica.wait_logged("diagnosis_run assigned")
    reader = AnswerReader(stack.kafka)
    with running_pipeline(stack, tmp_path / "pipeline"):
        for chunk, start in enumerate(range(0, len(asked), 10)):
            publish(stack.kafka, list(asked[start : start + 10]))
            time.sleep(0.4)
            if chunk == 2:
                assert second.terminate() == 0, second.log.read_text()
            if chunk == 4:
                second.start()
        answers = reader.wait_for(set(run_ids), timeout_s=300)
    reader.close()
    assert set(answers) == set(run_ids)
    first.wait_caught_up()
    assert first.terminate() == 0, first.log.read_text()
    assert second.terminate() == 0, second.log.read_text()
    for replica in (first, second):
        assert "diagnosis_run assigned" in replica.log.read_text(), "each held run partitions"
    shared = first.snapshot()

    alone = projection(start=first.start_offsets)
    alone.start()
    alone.wait_caught_up()
    assert alone.terminate() == 0, alone.log.read_text()
    ours = [r for r in shared["diagnosis_run"] if r["run_id"] in set(run_ids)]
    assert len(ours) == len(run_ids) and {r["status"] for r in ours} == {"answered"}
    assert not differences(shared, alone.snapshot()), differences(shared, alone.snapshot())


def test_dead_letters_are_projected_without_their_bytes(
    stack: StackHandle, projection: ProjectionFactory
) -> None:
    """The projection process reads the dead-letter topic into ``dead_letter``."""
    letters = [
        DeadLetter(
            run_id=run_id,
            producer=ProducerRef(service="test"),
            source_topic="tracebound.evidence",
            source_partition=1,
            source_offset=7,
            key=None if run_id == "unknown" else run_id.encode(),
            value=b"\xc3\x01 not avro",
            error_type="PoisonInput",
            error_message="cannot decode: " + "x" * 3000,
            service="gatekeeper",
        )
        for run_id in (f"dl-{uuid.uuid4()}", "unknown")
    ]
    model = projection(start=topic_ends(stack))
    model.start()
    publish(stack.kafka, letters)
    model.wait_caught_up()
    ids = [e.event_id for e in letters]
    with model.conn() as conn, conn.cursor(row_factory=dict_row) as cur:
        cur.execute("SELECT * FROM dead_letter WHERE event_id = ANY(%s) ORDER BY run_id", (ids,))
        rows = cur.fetchall()
    assert [r["run_id"] for r in rows] == [letters[0].run_id, None]
    assert {(r["service"], r["source_topic"], r["source_offset"]) for r in rows} == {
        ("gatekeeper", "tracebound.evidence", 7)
    }
    assert all(len(r["error_message"]) == 1000 and "value" not in r for r in rows)


def test_an_edited_applied_migration_is_refused(
    tmp_path: Path, projection: ProjectionFactory
) -> None:
    schema = projection()
    folder = tmp_path / "migrations"
    folder.mkdir()
    (folder / "0001_first.sql").write_text("CREATE TABLE t_one (id integer PRIMARY KEY);")
    settings = PostgresSettings.model_validate({"dsn": schema.dsn})
    with psycopg.connect(settings.dsn.get_secret_value(), autocommit=True) as conn:
        assert migrate(conn, folder) == ["0001_first"]
        assert migrate(conn, folder) == []
        (folder / "0002_second.sql").write_text("CREATE TABLE t_two (id integer);")
        assert migrate(conn, folder) == ["0002_second"]
        (folder / "0001_first.sql").write_text("CREATE TABLE t_one (id bigint PRIMARY KEY);")
        with pytest.raises(ConfigError, match="changed after it was applied"):
            migrate(conn, folder)
