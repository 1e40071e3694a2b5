"""``lookup_knowledge``: runbook blocks relevant to a question, deduplicated per run.

Why relevance levels and per-run dedup: a weakly related block cited as strong
evidence is as harmful as no evidence, so each block carries PRECISE,
HIGHLY_RELEVANT or REFERENCE and anything weaker is dropped. And a second
lookup in the same run must not hand the executor the same runbook again (it
only wastes context and invites double citation): documents already returned
are dropped, and when nothing new is left the status is ``deduped``.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from services.executor.tools import refs
from services.executor.tools.base import (
    RunContext,
    ToolOutcome,
    ToolParams,
    coerce_params,
    preview,
)
from services.executor.tools.knowledge_store import Candidate, SearchResult
from tracebound.errors import ConfigError
from tracebound.events import ToolBackend

TOOL_NAME = "lookup_knowledge"


class LookupKnowledgeParams(ToolParams):
    query: str = Field(min_length=1, max_length=500)
    alert_name: str | None = Field(default=None, max_length=200)
    top_k: int = Field(default=3, ge=1, le=10)


class RelevanceLevel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    min_score: float = Field(ge=0)


class RelevanceRules(BaseModel):
    """``rules/knowledge-relevance.json``: weights and level thresholds."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: str = Field(min_length=1)
    description: str = ""
    rank_normalization: int = Field(ge=0, le=63)
    coverage_weight: float = Field(ge=0)
    rank_weight: float = Field(ge=0)
    l0_boost: float = Field(ge=0)
    levels: tuple[RelevanceLevel, ...] = Field(min_length=1)

    @field_validator("levels")
    @classmethod
    def _descending(cls, levels: tuple[RelevanceLevel, ...]) -> tuple[RelevanceLevel, ...]:
        scores = [level.min_score for level in levels]
        if scores != sorted(scores, reverse=True) or len(set(scores)) != len(scores):
            raise ValueError("levels must be listed from the highest min_score down")
        return levels

    def score(self, candidate: Candidate) -> float:
        rank = candidate.rank
        if not self.rank_normalization & 32:  # not yet mapped to 0..1 by PostgreSQL
            rank = rank / (1 + rank)
        total = self.coverage_weight * candidate.coverage + self.rank_weight * rank
        if candidate.l0:
            total += self.l0_boost
        return round(min(total, 1.0), 4)

    def level(self, score: float) -> str | None:
        """The highest level the score reaches; ``None`` means drop the block."""
        return next((lv.name for lv in self.levels if score >= lv.min_score), None)


@cache
def load_relevance_rules(path: Path) -> RelevanceRules:
    try:
        return RelevanceRules.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, ValidationError) as exc:
        raise ConfigError(f"relevance rules {path} are unreadable or invalid: {exc}") from exc


class KnowledgeSearch(Protocol):
    """The knowledge base as the tool needs it (``KnowledgeStore`` in production)."""

    layer: str

    def search(self, text: str, alert_name: str | None) -> SearchResult: ...


class LookupKnowledgeTool:
    """Find runbook blocks; each becomes ``$.evidence_blocks[i]``."""

    name = TOOL_NAME
    description = (
        "Search the runbooks (symptoms, checks, mitigation); alert_name is a hint. Blocks "
        "are $.evidence_blocks[i]: general guidance, never a fact about this environment."
    )
    params_model: type[BaseModel] = LookupKnowledgeParams

    # The project's runbooks in PostgreSQL: project knowledge, not demo data.
    backend = ToolBackend(name="knowledge-base")

    def __init__(self, store: KnowledgeSearch, rules: RelevanceRules) -> None:
        self._store = store
        self._rules = rules

    def run(self, params: BaseModel, ctx: RunContext) -> ToolOutcome:
        p = coerce_params(params, LookupKnowledgeParams)
        result = self._store.search(p.query, p.alert_name)
        relevant: list[tuple[float, str, Candidate]] = []
        for candidate in result.candidates:
            score = self._rules.score(candidate)
            level = self._rules.level(score)
            if level is not None:
                relevant.append((score, level, candidate))
        relevant.sort(key=lambda item: -item[0])  # stable: ties keep the store's order
        fresh = [item for item in relevant if item[2].doc_id not in ctx.seen_documents]
        seen = ctx.seen_documents
        dropped = list(dict.fromkeys(c.doc_id for _s, _l, c in relevant if c.doc_id in seen))
        chosen = fresh[: p.top_k]
        layer = self._store.layer
        envelope: dict[str, Any] = {
            "success": True,
            "query": p.query,
            "evidence_blocks": [],
            "message": "",
        }
        if not chosen:
            if relevant:
                message = "relevant documents were already returned in this run: " + ", ".join(
                    dropped
                )
                details = refs.deduped(TOOL_NAME, p.query, message, dropped)
            else:
                message = "no relevant knowledge found"
                details = refs.no_evidence(TOOL_NAME, p.query, None, message)
            envelope["message"] = message
            return ToolOutcome(
                output=envelope,
                retrieval_details=details,
                success=True,
                retrieval_layer=layer,
                output_preview=preview(f"{details.evidence_status}: {message}"),
                l0_match_count=result.l0_count,
                l1_match_count=result.l1_count,
            )
        blocks = [
            {
                "doc_id": c.doc_id,
                "title": c.title,
                "heading": c.heading,
                "content": c.content,
                "score": score,
                "relevance_level": level,
            }
            for score, level, c in chosen
        ]
        ctx.seen_documents.update(c.doc_id for _s, _l, c in chosen)
        message = f"found {len(blocks)} relevant blocks" + (
            " (any-word fallback)" if result.fallback else ""
        )
        envelope.update(evidence_blocks=blocks, message=message)
        texts = [refs.knowledge_text(b) for b in blocks]
        return ToolOutcome(
            output=envelope,
            retrieval_details=refs.supported(
                refs.item_refs("evidence_blocks", texts), relevance_level=chosen[0][1]
            ),
            success=True,
            retrieval_layer=layer,
            output_preview=preview(
                f"{message}: " + "; ".join(f"{b['title']} / {b['heading']}" for b in blocks)
            ),
            l0_match_count=result.l0_count,
            l1_match_count=result.l1_count,
        )
