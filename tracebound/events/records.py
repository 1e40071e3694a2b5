"""Shared Avro records (``schemas/tracebound.<Name>.avsc``) carried inside events."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from pydantic import Field

from tracebound.events.base import JsonValue, Record

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class Alert(Record):
    """An Alertmanager alert with the webhook's own field names."""

    status: str
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    startsAt: str = ""
    endsAt: str = ""
    generatorURL: str = ""
    fingerprint: str = ""


class DiagnosisRequest(Record):
    mode: Literal["CHAT", "AIOPS"]
    query: str
    alerts: tuple[Alert, ...] = ()
    language: str = "en"
    requested_by: str = ""
    requested_at: datetime = EPOCH


class PromptRef(Record):
    name: str
    version: str
    resource: str


class PromptAudit(Record):
    version: str
    prompts: tuple[PromptRef, ...] = ()


class PlannerPlan(Record):
    selected_skill: str | None = None
    selection_reason: str
    plan: tuple[str, ...] = ()
    reasoning: str


class PlannedCall(Record):
    """One tool call of a plan; ``params`` travel as JSON text."""

    tool: str
    params: JsonValue
    purpose: str


class ExecutionPlan(Record):
    """The calls the executor runs and the entities its claims keep to.

    The planner records them so the executor (and a replay) runs what was
    planned, whatever the skill files say later.
    """

    calls: tuple[PlannedCall, ...] = ()
    services: tuple[str, ...] = ()
    alert_names: tuple[str, ...] = ()


class ModelFallback(Record):
    """Why a role answered from its rules although it was asked to use a model.

    ``kind`` is a stable token to count on (the model port's error kinds, or
    ``invalid_output`` when the reply did not have the role's shape); ``reason``
    is short and secret-free.
    """

    role: str
    kind: str
    reason: str = ""

    def describe(self) -> str:
        """``planner: rules fallback because: timeout: request timed out``."""
        cause = f"{self.kind}: {self.reason}" if self.reason else self.kind
        return f"{self.role}: rules fallback because: {cause}"


class PlanSnapshot(Record):
    planner_plan: PlannerPlan
    narrow_scope: bool
    skill_version: str | None = None
    planner_mode: str = "rules"
    execution: ExecutionPlan | None = None  # None: recorded before plans carried their calls
    fallback: ModelFallback | None = None  # set when planner_mode is rules-fallback


class RetryContext(Record):
    round: int
    reasons: tuple[str, ...] = ()
    failed_claims: tuple[str, ...] = ()
    missing_info: tuple[str, ...] = ()


class EvidenceRef(Record):
    raw_path: str
    text: str


class RetrievalDetails(Record):
    evidence_status: str
    evidence_refs: tuple[EvidenceRef, ...] = ()
    relevance_level: str | None = None
    dedup_reason: str | None = None


class ToolBackend(Record):
    """Where a tool's answer came from: ``request``, ``demo``, ``prometheus``, ``loki``,
    ``knowledge-base`` or ``none``; the URL carries no credentials and no query."""

    name: str
    url: str = ""

    def label(self) -> str:
        """``prometheus (http://prom:9090)`` or just ``request``: how traces show it."""
        return f"{self.name} ({self.url})" if self.url else self.name


class ToolInvocation(Record):
    source_invocation_id: int
    tool_name: str
    input_params: JsonValue
    output: JsonValue
    output_preview: str = ""
    retrieval_layer: str | None = None
    l0_match_count: int | None = None
    l1_match_count: int | None = None
    retrieval_details: RetrievalDetails | None = None
    duration_ms: int
    success: bool
    error_message: str | None = None
    round: int = 1
    backend: ToolBackend | None = None  # None: recorded before invocations named their backend


PARSE_STATES = ("valid", "repaired", "invalid", "missing")
USABLE_PARSE_STATES = ("valid", "repaired")


class ParseStatus(Record):
    """``executor_output_parse_status``: whether the structured output can be used.

    ``repaired`` is usable: the shape is right, but something was recovered or
    normalised on the way (a fenced block, surrounding prose, a tool call the
    server left in the text) and ``detail`` says what.
    """

    status: str  # valid | repaired | invalid | missing
    detail: str = ""
    fallback: ModelFallback | None = None  # set when the rules executor stood in for the model

    @property
    def usable(self) -> bool:
        return self.status in USABLE_PARSE_STATES


class RuleMeta(Record):
    id: str
    description: str
    enabled: bool
    default_severity: str


class CheckedBinding(Record):
    claim_id: str
    binding_index: int = 0
    tool_name: str | None = None
    source_invocation_id: int | None = None
    raw_path: str | None = None
    matched_text: str | None = None
    status: str
    rule: str | None = None
    reason: str | None = None


class GateNote(Record):
    rule: str
    severity: str | None = None
    claim_id: str | None = None
    binding_index: int | None = None
    message: str
    hint: JsonValue = None
    source_invocation_id: int | None = None
    raw_path: str | None = None


class GatekeeperOutcome(Record):
    status: Literal["pass", "fail"]
    severity: Literal["none", "low_confid", "reject"]
    rule_set_version: str
    rules: tuple[RuleMeta, ...] = ()
    checked_bindings: tuple[CheckedBinding, ...] = ()
    failed_rules: tuple[str, ...] = ()
    warnings: tuple[GateNote, ...] = ()
    errors: tuple[GateNote, ...] = ()


class ToolTraceEntry(Record):
    source_invocation_id: int
    tool_name: str
    success: bool
    evidence_status: str
    raw_paths: tuple[str, ...] = ()
    input_summary: str = ""
    backend: ToolBackend | None = None


class ClaimCheck(Record):
    claim_id: str
    claim_type: str
    claim_text: str
    status: str  # SUPPORTED | REFUTED | NOT_ENOUGH_INFO
    reason: str
    raw_paths: tuple[str, ...] = ()


class FactCheck(Record):
    """One fact of a claim against its cited evidence: found, contradicted, or neither;
    ``detail`` says what it was checked against (``stated in evidence as 'current=92%'``)."""

    claim_id: str
    kind: str
    fact: str
    found: bool
    conflict: bool = False
    detail: str = ""


class AllowedClaim(Record):
    claim_id: str
    claim_type: str
    claim_text: str
    evidence_excerpts: tuple[str, ...] = ()
    raw_paths: tuple[str, ...] = ()


class ComposerInput(Record):
    original_query: str
    verdict: str
    allowed_claims: tuple[AllowedClaim, ...] = ()
    allowed_hypotheses: tuple[str, ...] = ()
    missing_info: tuple[str, ...] = ()
    recommended_actions: tuple[str, ...] = ()
    rationale: str
    evidence_backends: tuple[str, ...] = ()  # backend names of the round's tool calls


class RecommendedAction(Record):
    action_text: str
    reason: str


class GuardResult(Record):
    ok: bool
    violations: tuple[str, ...] = ()
    replaced: bool = False


__all__ = [
    "Alert",
    "AllowedClaim",
    "CheckedBinding",
    "ClaimCheck",
    "ComposerInput",
    "DiagnosisRequest",
    "EvidenceRef",
    "ExecutionPlan",
    "FactCheck",
    "GateNote",
    "GatekeeperOutcome",
    "GuardResult",
    "JsonValue",
    "ModelFallback",
    "ParseStatus",
    "PlanSnapshot",
    "PlannedCall",
    "PlannerPlan",
    "PromptAudit",
    "PromptRef",
    "RecommendedAction",
    "RetrievalDetails",
    "RetryContext",
    "RuleMeta",
    "ToolBackend",
    "ToolInvocation",
    "ToolTraceEntry",
]
