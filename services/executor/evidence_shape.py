"""The shape of ``executor_evidence_v2`` (docs/contracts.md), as the model's reply must have it.

Why shape here and rules in the gatekeeper: the gatekeeper judges what a well
formed output *says* (the answer version, forbidden fields, empty bindings, a
quoted or unknown invocation id, a raw path that is not an array item), each
with its rule id and severity, and the repair turn names those rules back to
the model. So this model checks only what every later stage relies on being
there: the top-level lists, each claim an object with its texts, each binding
an object with its tool, path and excerpt. Anything it does not type is passed
on untouched (``extra="allow"``), so the gatekeeper still sees it.

A reply that fails this shape is ``invalid`` with the reason, never ``valid``:
a JSON object is not an answer just because it parses.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictStr

MAX_CLAIMS = 50
MAX_BINDINGS = 20
MAX_ITEMS = 50


class EvidenceBindingShape(BaseModel):
    """One ``evidence_bindings[]`` entry; the id may be missing or quoted: the gatekeeper judges."""

    model_config = ConfigDict(extra="allow")

    tool_name: StrictStr
    source_invocation_id: int | str | None = None
    raw_path: StrictStr | None = None
    evidence_excerpt: StrictStr


class ClaimShape(BaseModel):
    """One ``claims[]`` entry (the contract's required fields)."""

    model_config = ConfigDict(extra="allow")

    claim_id: StrictStr
    claim_type: StrictStr = Field(min_length=1)
    claim_text: StrictStr = Field(min_length=1)
    support_level: StrictStr
    evidence_bindings: list[EvidenceBindingShape] = Field(max_length=MAX_BINDINGS)


class ExecutorEvidenceShape(BaseModel):
    """``executor_evidence_v2``: every field the seed marks required, with its type."""

    model_config = ConfigDict(extra="allow")

    answer_version: StrictStr
    claims: list[ClaimShape] = Field(max_length=MAX_CLAIMS)
    hypotheses: list[StrictStr | dict[str, Any]] = Field(max_length=MAX_ITEMS)
    recommended_actions: list[StrictStr | dict[str, Any]] = Field(max_length=MAX_ITEMS)
    missing_info: list[StrictStr | dict[str, Any]] = Field(max_length=MAX_ITEMS)


__all__ = ["ClaimShape", "EvidenceBindingShape", "ExecutorEvidenceShape"]
