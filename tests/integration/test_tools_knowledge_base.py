"""lookup_knowledge on the PostgreSQL knowledge base built from the repository's runbooks."""

from __future__ import annotations

import shutil
from pathlib import Path

import psycopg
import pytest

from services.executor.tools import LookupKnowledgeParams, RunContext, ToolOutcome, ToolSettings
from services.executor.tools.knowledge import LookupKnowledgeTool, load_relevance_rules
from services.executor.tools.knowledge_store import KnowledgeStore
from tests.support.stack import StackHandle

SETTINGS = ToolSettings()
RULES = load_relevance_rules(SETTINGS.relevance_rules)


def store(stack: StackHandle, runbooks: Path = SETTINGS.runbooks_dir) -> KnowledgeStore:
    dsn = stack.postgres.dsn.get_secret_value()
    return KnowledgeStore(dsn, runbooks, RULES.rank_normalization)


@pytest.fixture(scope="module")
def tool(stack: StackHandle) -> LookupKnowledgeTool:
    return LookupKnowledgeTool(store(stack), RULES)


def run(tool: LookupKnowledgeTool, ctx: RunContext | None = None, **params: object) -> ToolOutcome:
    return tool.run(LookupKnowledgeParams.model_validate(params), ctx or RunContext("it"))


def test_pool_exhaustion_finds_the_hikaricp_runbook(tool: LookupKnowledgeTool) -> None:
    outcome = run(tool, query="Connection is not available, request timed out")
    details = outcome.retrieval_details
    assert details.evidence_status == "supported"
    blocks = outcome.output["evidence_blocks"]
    assert blocks[0]["doc_id"] == "mysql-connection-pool-exhaustion"
    assert blocks[0]["title"] == "MySQL connection pool exhaustion (HikariCP)"
    assert details.relevance_level == blocks[0]["relevance_level"]
    assert details.relevance_level in {"PRECISE", "HIGHLY_RELEVANT"}
    ref = details.evidence_refs[0]
    assert ref.raw_path == "$.evidence_blocks[0]"
    assert ref.text.startswith(
        f"MySQL connection pool exhaustion (HikariCP) / {blocks[0]['heading']}: "
    )
    assert len(ref.text) < 520
    assert outcome.retrieval_layer == "L0+L1"
    assert outcome.l1_match_count is not None and outcome.l1_match_count >= 1
    assert outcome.l0_match_count == 0


def test_alert_name_is_an_l0_hint_that_boosts(tool: LookupKnowledgeTool) -> None:
    plain = run(tool, query="cpu checks jstack")
    hinted = run(tool, query="cpu checks jstack", alert_name="HighCPUUsage")
    assert hinted.l0_match_count == 1 and plain.l0_match_count == 0
    top_plain = plain.output["evidence_blocks"][0]
    top_hinted = hinted.output["evidence_blocks"][0]
    assert top_hinted["doc_id"] == "high-cpu-usage"
    assert top_hinted["score"] > top_plain["score"]
    assert top_hinted["relevance_level"] == "PRECISE"


def test_l0_never_bypasses_l1(tool: LookupKnowledgeTool) -> None:
    outcome = run(tool, query="pizza recipe", alert_name="HighCPUUsage")
    assert outcome.l0_match_count == 1
    assert outcome.l1_match_count == 0
    assert outcome.retrieval_details.evidence_status == "no_evidence"
    assert outcome.retrieval_details.evidence_refs[0].raw_path == "$.no_evidence"


def test_exact_title_is_an_l0_hint(tool: LookupKnowledgeTool) -> None:
    outcome = run(tool, query="SlowResponse")
    assert outcome.l0_match_count == 1
    assert outcome.output["evidence_blocks"][0]["doc_id"] == "slow-response"


def test_or_fallback_when_not_every_word_matches(tool: LookupKnowledgeTool) -> None:
    outcome = run(tool, query="heap dump before restart kafka")
    assert "any-word fallback" in outcome.output["message"]
    assert outcome.output["evidence_blocks"][0]["doc_id"] == "high-memory-usage"


def test_unrelated_question_is_no_evidence(tool: LookupKnowledgeTool) -> None:
    outcome = run(tool, query="kafka consumer lag")
    assert outcome.retrieval_details.evidence_status == "no_evidence"
    assert outcome.retrieval_details.evidence_refs[0].text == (
        "lookup_knowledge returned no evidence; evidence_status=no_evidence; "
        "query=kafka consumer lag; topic=-; total=0; message=no relevant knowledge found"
    )


def test_documents_are_deduplicated_within_a_run(tool: LookupKnowledgeTool) -> None:
    ctx = RunContext("dedup-run")
    first = run(tool, ctx, query="heap dump", top_k=5)
    assert first.retrieval_details.evidence_status == "supported"
    assert ctx.seen_documents == {"high-memory-usage"}
    second = run(tool, ctx, query="heap dump")
    details = second.retrieval_details
    assert details.evidence_status == "deduped"
    assert details.dedup_reason == "documents already returned in this run: high-memory-usage"
    assert [r.raw_path for r in details.evidence_refs] == ["$.no_evidence"]
    other_run = run(tool, RunContext("other-run"), query="heap dump")
    assert other_run.retrieval_details.evidence_status == "supported"


def test_injection_attempts_are_values(tool: LookupKnowledgeTool) -> None:
    outcome = run(tool, query="'); DROP TABLE tb_kb_chunk; -- | & !:*")
    assert outcome.retrieval_details.evidence_status in {"no_evidence", "supported"}
    assert run(tool, query="heap dump").retrieval_details.evidence_status == "supported"


def test_runbooks_reload_only_when_they_change(stack: StackHandle, tmp_path: Path) -> None:
    dsn = stack.postgres.dsn.get_secret_value()
    with psycopg.connect(dsn) as conn:
        store(stack).ensure_ready(conn)
        assert store(stack).ensure_ready(conn) is False
    changed = tmp_path / "runbooks"
    shutil.copytree(SETTINGS.runbooks_dir, changed)
    (changed / "kafka-consumer-lag.md").write_text(
        "# KafkaConsumerLag\n\nAlerts: KafkaConsumerLagHigh\n\n"
        "## Checks\n\nCompare consumer group lag per partition with the produce rate.\n"
    )
    try:
        lagging = LookupKnowledgeTool(store(stack, changed), RULES)
        outcome = run(lagging, query="consumer group lag")
        assert outcome.output["evidence_blocks"][0]["doc_id"] == "kafka-consumer-lag"
    finally:
        with psycopg.connect(dsn) as conn:
            assert store(stack).ensure_ready(conn) is True
    restored = LookupKnowledgeTool(store(stack), RULES)
    assert run(restored, query="consumer group lag").retrieval_details.evidence_status == (
        "no_evidence"
    )


def test_a_dropped_table_heals_itself(stack: StackHandle) -> None:
    kb = store(stack)
    dsn = stack.postgres.dsn.get_secret_value()
    with psycopg.connect(dsn) as conn:
        kb.ensure_ready(conn)
        conn.execute("DROP TABLE tb_kb_chunk")
    outcome = run(LookupKnowledgeTool(kb, RULES), query="heap dump")
    assert outcome.retrieval_details.evidence_status == "supported"
    with psycopg.connect(dsn) as conn:
        assert store(stack).ensure_ready(conn) is False
