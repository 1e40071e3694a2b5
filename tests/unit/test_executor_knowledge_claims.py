"""Runbook knowledge in the structured output: causes as hypotheses, checks as next steps."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from services.composer.compose import compose
from services.executor.claim_templates import templates
from services.executor.claims import build_evidence
from services.executor.tools import refs
from services.executor.tools.knowledge_store import parse_runbook
from services.executor.tools.runbook_items import section_items, section_kind
from tests.support.rulebook import BOOK
from tracebound.events import ComposerInput, ExecutionPlan, ToolInvocation
from tracebound.resources import ROOT as REPO_ROOT

RUNBOOKS = sorted((REPO_ROOT / "runbooks").glob("*.md"))
MARKDOWN = ("- ", "**", "##", "\n", "`")


def lookup(*paths: Path) -> ToolInvocation:
    """A lookup_knowledge invocation returning every section of the runbooks, in order."""
    blocks: list[dict[str, Any]] = [
        {"doc_id": c.doc_id, "title": c.title, "heading": c.heading, "content": c.content}
        for path in paths
        for c in parse_runbook(path)
    ]
    texts = [refs.knowledge_text(b) for b in blocks]
    return ToolInvocation(
        source_invocation_id=1,
        tool_name="lookup_knowledge",
        input_params={"query": "runbook"},
        output={"success": True, "evidence_blocks": blocks},
        retrieval_details=refs.supported(refs.item_refs("evidence_blocks", texts)),
        duration_ms=1,
        success=True,
    )


def evidence(path: Path, language: str = "en", narrow: bool = False) -> dict[str, Any]:
    plan = ExecutionPlan(calls=())
    return build_evidence([lookup(path)], plan, language, narrow=narrow, max_claims=5)


@pytest.mark.parametrize("path", RUNBOOKS, ids=lambda p: p.stem)
def test_every_runbook_has_causes_and_checks(path: Path) -> None:
    kinds = templates()["runbook_sections"]
    found = {section_kind(c.heading, kinds) for c in parse_runbook(path)}
    assert {"causes", "checks"} <= found
    out = evidence(path)
    assert out["hypotheses"] and out["recommended_actions"]
    for line in (*out["hypotheses"], *out["recommended_actions"]):
        assert not any(mark in line for mark in MARKDOWN), line


def test_causes_become_labelled_hypotheses_and_symptoms_do_not() -> None:
    out = evidence(REPO_ROOT / "runbooks" / "slow-response.md")
    assert out["hypotheses"][0] == (
        "Possible cause from the runbook, not verified here: "
        "Slow database queries: missing indexes, full table scans, lock waits."
    )
    assert all(
        "Readiness probes" not in h and "P99 latency above" not in h for h in out["hypotheses"]
    )
    assert out["recommended_actions"][0] == (
        "Runbook check, not yet run: Break the latency down by endpoint and find the slowest one."
    )
    assert out["claims"] == []


def test_continuation_lines_join_and_chinese_labels() -> None:
    out = evidence(REPO_ROOT / "runbooks" / "high-cpu-usage.md", language="zh-CN")
    joined = (
        "知识库列出的可能原因（未在当前环境验证）：Retries from callers after downstream timeouts"
    )
    assert any(
        h.startswith(joined) and h.endswith("multiplying the work per user request.")
        for h in out["hypotheses"]
    )
    assert all(a.startswith("知识库建议的检查（尚未执行）：") for a in out["recommended_actions"])


def test_narrow_questions_get_no_runbook_items() -> None:
    out = evidence(REPO_ROOT / "runbooks" / "high-cpu-usage.md", narrow=True)
    assert out["hypotheses"] == [] and out["recommended_actions"] == []


def test_section_items_strip_markdown() -> None:
    content = "- **Slow** queries\n  that hold `connections`.\n* Leaks\n\n"
    content += "1. A numbered step\nA paragraph\n"
    assert section_items(content) == (
        "Slow queries that hold connections.",
        "Leaks",
        "A numbered step A paragraph",
    )
    assert section_kind("  likely   CAUSES ", {"causes": ["Likely causes"]}) == "causes"
    assert section_kind("Symptoms", templates()["runbook_sections"]) is None


def test_runbook_lines_survive_the_composer_screen() -> None:
    out = evidence(REPO_ROOT / "runbooks" / "high-disk-usage.md")
    material = ComposerInput(
        original_query="q",
        verdict="LOW_CONFID",
        allowed_hypotheses=tuple(out["hypotheses"]),
        recommended_actions=tuple(out["recommended_actions"]),
        rationale="r",
    )
    text = compose(material, "en", book=BOOK).user_facing_answer
    cause = "Binary logs or slow query logs not purged."
    assert f"Possible cause from the runbook, not verified here: {cause}" in text
    assert "Symptoms" not in text and "**" not in text


def test_only_the_best_ranked_runbook_gives_hypotheses() -> None:
    disk, cpu = (REPO_ROOT / "runbooks" / f"{n}.md" for n in ("high-disk-usage", "high-cpu-usage"))
    out = build_evidence(
        [lookup(disk, cpu)], ExecutionPlan(calls=()), "en", narrow=False, max_claims=5
    )
    assert out == evidence(disk)
