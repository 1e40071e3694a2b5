"""lookup_knowledge policy without a database: scoring, levels, dedup, runbook parsing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from services.executor.tools import LookupKnowledgeParams, RunContext, ToolSettings
from services.executor.tools.knowledge import (
    LookupKnowledgeTool,
    RelevanceRules,
    load_relevance_rules,
)
from services.executor.tools.knowledge_store import (
    Candidate,
    SearchResult,
    chunks_hash,
    load_runbooks,
    parse_runbook,
    query_words,
)
from tracebound.errors import ConfigError

SETTINGS = ToolSettings()
RULES = load_relevance_rules(SETTINGS.relevance_rules)


def cand(
    doc: str, coverage: float, rank: float = 0.1, l0: bool = False, heading: str = "Checks"
) -> Candidate:
    return Candidate(
        doc, f"Title {doc}", heading, f"Content of {doc}. Second sentence.", rank, coverage, l0
    )


class FakeStore:
    """Stands in for the PostgreSQL knowledge base; returns fixed candidates."""

    layer = "L0+L1"

    def __init__(self, candidates: list[Candidate], l0: int = 0, fallback: bool = False) -> None:
        self.result = SearchResult(candidates, l0, len(candidates), fallback)
        self.calls: list[tuple[str, str | None]] = []

    def search(self, text: str, alert_name: str | None) -> SearchResult:
        self.calls.append((text, alert_name))
        return self.result


def test_rules_file_is_valid_and_levels_descend() -> None:
    assert [lv.name for lv in RULES.levels] == ["PRECISE", "HIGHLY_RELEVANT", "REFERENCE"]
    assert RULES.level(1.0) == "PRECISE"
    assert RULES.level(RULES.levels[-1].min_score - 0.01) is None


def test_l0_only_boosts() -> None:
    plain = RULES.score(cand("a", coverage=0.5))
    boosted = RULES.score(cand("a", coverage=0.5, l0=True))
    assert boosted == pytest.approx(min(plain + RULES.l0_boost, 1.0))
    assert RULES.score(cand("a", coverage=1.0, rank=0.9, l0=True)) == 1.0


def test_rules_with_ascending_levels_are_rejected(tmp_path: Path) -> None:
    raw = json.loads(SETTINGS.relevance_rules.read_text())
    raw["levels"] = list(reversed(raw["levels"]))
    path = tmp_path / "rules.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(ConfigError):
        load_relevance_rules(path)


def test_blocks_carry_score_and_level_and_refs() -> None:
    store = FakeStore([cand("pool", 1.0, 0.5), cand("cpu", 0.5), cand("weak", 0.1)])
    tool = LookupKnowledgeTool(store, RULES)
    ctx = RunContext("r")
    outcome = tool.run(LookupKnowledgeParams(query="pool exhausted"), ctx)
    blocks = outcome.output["evidence_blocks"]
    assert [b["doc_id"] for b in blocks] == ["pool", "cpu"]  # "weak" is below REFERENCE
    assert blocks[0]["relevance_level"] == "PRECISE"
    assert outcome.retrieval_details.relevance_level == "PRECISE"
    assert outcome.retrieval_details.evidence_status == "supported"
    assert outcome.retrieval_details.dedup_reason is None
    refs = outcome.retrieval_details.evidence_refs
    assert [r.raw_path for r in refs] == ["$.evidence_blocks[0]", "$.evidence_blocks[1]"]
    assert refs[0].text == "Title pool / Checks: Content of pool. Second sentence."
    assert outcome.l1_match_count == 3 and outcome.l0_match_count == 0
    assert outcome.retrieval_layer == "L0+L1"
    assert ctx.seen_documents == {"pool", "cpu"}


def test_top_k_limits_blocks() -> None:
    store = FakeStore([cand(f"d{i}", 1.0) for i in range(6)])
    outcome = LookupKnowledgeTool(store, RULES).run(
        LookupKnowledgeParams(query="q", top_k=2), RunContext("r")
    )
    assert len(outcome.output["evidence_blocks"]) == 2


def test_seen_documents_are_dropped_and_new_ones_fill_the_slots() -> None:
    store = FakeStore(
        [cand("pool", 1.0), cand("pool", 0.9, heading="Mitigation"), cand("mem", 0.6)]
    )
    ctx = RunContext("r", seen_documents={"pool"})
    outcome = LookupKnowledgeTool(store, RULES).run(LookupKnowledgeParams(query="q"), ctx)
    assert [b["doc_id"] for b in outcome.output["evidence_blocks"]] == ["mem"]
    assert outcome.retrieval_details.evidence_status == "supported"


def test_everything_seen_is_deduped() -> None:
    store = FakeStore([cand("pool", 1.0), cand("mem", 0.6)])
    tool = LookupKnowledgeTool(store, RULES)
    ctx = RunContext("r")
    first = tool.run(LookupKnowledgeParams(query="q"), ctx)
    assert first.retrieval_details.evidence_status == "supported"
    second = tool.run(LookupKnowledgeParams(query="q"), ctx)
    details = second.retrieval_details
    assert details.evidence_status == "deduped"
    assert details.dedup_reason == "documents already returned in this run: pool, mem"
    (ref,) = details.evidence_refs
    assert ref.raw_path == "$.no_evidence"
    assert "already returned in this run" in ref.text
    assert second.output["evidence_blocks"] == []
    assert second.success


def test_nothing_relevant_is_no_evidence() -> None:
    store = FakeStore([cand("weak", 0.1)], l0=1)
    outcome = LookupKnowledgeTool(store, RULES).run(
        LookupKnowledgeParams(query="pizza", alert_name="HighCPUUsage"), RunContext("r")
    )
    assert outcome.retrieval_details.evidence_status == "no_evidence"
    assert outcome.retrieval_details.evidence_refs[0].text.startswith(
        "lookup_knowledge returned no evidence; evidence_status=no_evidence; query=pizza; topic=-"
    )
    assert outcome.l0_match_count == 1
    assert store.calls == [("pizza", "HighCPUUsage")]


def test_every_runbook_parses_with_title_alerts_and_sections() -> None:
    chunks = load_runbooks(SETTINGS.runbooks_dir)
    docs = {c.doc_id for c in chunks}
    assert docs == {
        "high-cpu-usage",
        "high-memory-usage",
        "slow-response",
        "service-unavailable",
        "high-disk-usage",
        "mysql-connection-pool-exhaustion",
    }
    by_doc = {c.doc_id: c for c in chunks}
    assert by_doc["high-cpu-usage"].title == "HighCPUUsage"
    assert "HighCPUUsage" in by_doc["high-cpu-usage"].alert_names
    assert by_doc["mysql-connection-pool-exhaustion"].title.startswith("MySQL connection pool")
    for doc in docs:
        headings = [c.heading for c in chunks if c.doc_id == doc]
        assert headings[0] == "Overview"
        assert {"Symptoms", "Checks", "Mitigation"} <= set(headings)
    for c in chunks:
        assert not c.content.lower().startswith("alerts:")


def test_parse_runbook_without_title_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.md"
    path.write_text("## Checks\n\nnothing\n")
    with pytest.raises(ConfigError):
        parse_runbook(path)


def test_hash_changes_with_content(tmp_path: Path) -> None:
    path = tmp_path / "a.md"
    path.write_text("# A\n\nAlerts: X\n\n## Checks\n\none\n")
    first = chunks_hash(parse_runbook(path))
    path.write_text("# A\n\nAlerts: X\n\n## Checks\n\ntwo\n")
    assert chunks_hash(parse_runbook(path)) != first


def test_query_words_are_plain_words() -> None:
    assert query_words("HikariCP | pool & (x):* !no 'q'") == ["hikaricp", "pool", "x", "no", "q"]


def test_relevance_rules_model_is_strict() -> None:
    with pytest.raises(ValueError):
        RelevanceRules.model_validate({"version": "v", "levels": []})
