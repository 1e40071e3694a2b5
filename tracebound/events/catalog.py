"""The eleven events of the wire contract, one class per ``schemas/tracebound.<Event>.avsc``."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from tracebound import topics
from tracebound.events.base import Event, JsonValue
from tracebound.events.records import (
    Alert,
    ClaimCheck,
    ComposerInput,
    DiagnosisRequest,
    FactCheck,
    GatekeeperOutcome,
    GuardResult,
    ModelFallback,
    ParseStatus,
    PlanSnapshot,
    PromptAudit,
    RecommendedAction,
    RetryContext,
    ToolInvocation,
    ToolTraceEntry,
)


class DiagnosisRequested(Event):
    schema_name = "DiagnosisRequested"
    topic = topics.REQUESTS
    request: DiagnosisRequest
    # Set by the ingest when tracing is on, so the read model can link the run's trace.
    trace_id: str | None = None


class PlanProduced(Event):
    schema_name = "PlanProduced"
    topic = topics.PLANS
    plan: PlanSnapshot
    request: DiagnosisRequest
    prompt_audit: PromptAudit


class RetryRequested(Event):
    schema_name = "RetryRequested"
    topic = topics.RETRIES
    retry_context: RetryContext
    plan: PlanSnapshot
    request: DiagnosisRequest


class ToolInvoked(Event):
    schema_name = "ToolInvoked"
    topic = topics.TOOL_INVOCATIONS
    tool_invocation: ToolInvocation


class EvidenceProduced(Event):
    schema_name = "EvidenceProduced"
    topic = topics.EVIDENCE
    executor_final_answer: str
    executor_structured_output: JsonValue = None
    executor_output_parse_status: ParseStatus
    tool_trace: tuple[ToolInvocation, ...] = ()
    round: int
    request: DiagnosisRequest
    plan: PlanSnapshot
    prompt_audit: PromptAudit


class GatekeeperResult(Event):
    schema_name = "GatekeeperResult"
    topic = topics.GATEKEEPER_RESULTS
    gatekeeper_result: GatekeeperOutcome
    executor_structured_output: JsonValue = None
    executor_final_answer: str = ""
    executor_output_parse_status: ParseStatus
    tool_trace_summary: tuple[ToolTraceEntry, ...] = ()
    original_query: str
    round: int
    request: DiagnosisRequest
    plan: PlanSnapshot
    prompt_audit: PromptAudit


class Verdict(Event):
    schema_name = "Verdict"
    topic = topics.VERDICTS
    verdict: Literal["PASS", "LOW_CONFID", "REJECT"]
    groundedness_score: float
    critical_fact_count: int
    claim_checks: tuple[ClaimCheck, ...] = ()
    facts_checked: tuple[FactCheck, ...] = ()
    rationale: str
    composer_input: ComposerInput
    prompt_audit: PromptAudit
    round: int
    verifier_mode: str = "rules"
    request: DiagnosisRequest
    aiops_rule_evaluation: JsonValue = None
    fallbacks: tuple[ModelFallback, ...] = ()  # of the planner, executor and verifier


class Answer(Event):
    schema_name = "Answer"
    topic = topics.ANSWERS
    answer_summary: str
    recommended_actions: tuple[RecommendedAction, ...] = ()
    user_facing_answer: str
    verdict: Literal["PASS", "LOW_CONFID", "REJECT"]
    language: str
    guard: GuardResult
    latency_ms: int
    final_status: str  # answered | degraded | failed
    round: int = 1
    prompt_audit: PromptAudit
    fallbacks: tuple[ModelFallback, ...] = ()  # every role of the run that fell back to rules


class AgentStep(Event):
    schema_name = "AgentStep"
    topic = topics.AGENT_STEPS
    agent_name: str
    step_index: int
    model_input: str
    model_output: str
    thought: str | None = None
    has_tool_call: bool
    duration_ms: int
    token_count: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    model: str | None = None
    prompt_version: str | None = None
    success: bool = True
    error_message: str | None = None
    finish_reason: str | None = None


class DeadLetter(Event):
    schema_name = "DeadLetter"
    topic = topics.DEAD_LETTERS
    source_topic: str
    source_partition: int
    source_offset: int
    key: bytes | None = None
    value: bytes | None = Field(default=None, repr=False)
    error_type: str
    error_message: str
    service: str


class AlertsResolved(Event):
    """Alerts of a run that Alertmanager reports resolved: a fact about the run, not a stage.

    No role answers it; the read side records it on the run it names.
    """

    schema_name = "AlertsResolved"
    topic = topics.RESOLUTIONS
    alerts: tuple[Alert, ...]
    requested_by: str = ""


EVENT_TYPES: dict[str, type[Event]] = {
    cls.schema_name: cls
    for cls in (
        DiagnosisRequested,
        PlanProduced,
        RetryRequested,
        ToolInvoked,
        EvidenceProduced,
        GatekeeperResult,
        Verdict,
        Answer,
        AgentStep,
        AlertsResolved,
        DeadLetter,
    )
}

__all__ = [
    "EVENT_TYPES",
    "AgentStep",
    "AlertsResolved",
    "Answer",
    "DeadLetter",
    "DiagnosisRequested",
    "EvidenceProduced",
    "GatekeeperResult",
    "PlanProduced",
    "RecommendedAction",
    "RetryRequested",
    "ToolInvoked",
    "Verdict",
]
