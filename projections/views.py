"""The documents the read side serves, as typed models: the run list and the trace.

``GET /api/v1/runs``, ``GET /api/v1/runs/{run_id}/trace``, the trace page and
``tracebound trace --json`` all serve these models, and the OpenAPI document is
generated from them, so the description cannot drift from the responses.

Values are typed as the events that filled the read model type them. Fields
copied from the executor's structured output are any JSON (``JsonValue``): the
gatekeeper judges malformed output, and its trace must still show what was
said. Validation is strict, so nothing is coerced on the way out: a document
is served exactly as it was assembled. Timestamps are ISO 8601 text.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from pydantic import MISSING, BaseModel, ConfigDict, Field, JsonValue

Status = Literal["requested", "planned", "executing", "gated", "verifying", "retrying", "answered"]
Verdict = Literal["PASS", "LOW_CONFID", "REJECT"]
STATUSES: tuple[str, ...] = get_args(Status)
VERDICTS: tuple[str, ...] = get_args(Verdict)
TRACE_VERSION = "v1"
Timestamp = Annotated[str, Field(json_schema_extra={"format": "date-time"})]
# A gatekeeper outcome: pass, fail, backfilled, skipped or unchecked.
GateStatus = Annotated[str, Field(description="gatekeeper outcome: pass, fail, backfilled, ...")]


def _absent_unless_given(description: str) -> Any:
    """A key that is written only when the document has it (``MISSING`` leaves it out)."""
    return Field(default=MISSING, description=description)


class View(BaseModel):
    """A served document: strict (no coercion) and closed (no undocumented key)."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    def document(self) -> dict[str, Any]:
        """The JSON document served (what ``json.dumps`` writes)."""
        return self.model_dump(mode="json")


# --------------------------------------------------------------------------- run list


class ResolvedAlert(View):
    """An alert of the run that Alertmanager reported resolved (an ``AlertsResolved`` event)."""

    fingerprint: str
    alertname: str
    labels: dict[str, str]
    startsAt: str
    endsAt: str


RESOLVED_AT = "when the last resolved alert of the run ended (its endsAt); null while none is"


class RunSummary(View):
    run_id: str
    session_id: str | None
    mode: str | None
    query: str | None
    status: Status
    verdict: Verdict | None
    final_status: str | None
    round: int
    selected_skill: str | None
    requested_at: Timestamp | None
    latency_ms: int | None
    token_count: int | None
    updated_at: Timestamp | None
    resolved_at: Timestamp | None = Field(description=RESOLVED_AT)
    resolved_alerts: list[ResolvedAlert] | None = Field(
        description="the run's alerts reported resolved, by endsAt; null while none is"
    )


class RunList(View):
    runs: list[RunSummary]
    next_cursor: str | None = Field(
        description="pass as `cursor` for the next page; null on the last page"
    )


# --------------------------------------------------------------------------- trace


class TraceFallback(View):
    """A role that answered from its rules although it was asked to use a model."""

    role: str
    kind: str
    reason: str


class TraceRun(View):
    """The run row: request, plan, status, verdict, latency, llm fallbacks."""

    run_id: str
    session_id: str | None
    mode: str | None
    query: str | None
    language: str | None
    requested_by: str | None
    requested_at: Timestamp | None
    status: Status | None
    round: int | None
    selected_skill: str | None
    narrow_scope: bool | None
    verdict: Verdict | None
    final_status: str | None
    latency_ms: int | None
    request: JsonValue
    trace_id: str | None = Field(
        description="the run's distributed trace (W3C trace id) when the ingest traced it"
    )
    plan: JsonValue
    updated_at: Timestamp | None
    resolved_at: Timestamp | None = Field(description=RESOLVED_AT)
    resolved_alerts: list[ResolvedAlert] | None = Field(
        description="the run's alerts reported resolved, by endsAt; null while none is"
    )
    fallbacks: list[TraceFallback] = Field(
        description="roles of the answered round that fell back from the model to rules, and why"
    )


class TimelineStage(View):
    """One stage in pipeline order with its first and last event time and offsets."""

    stage: str
    label: str
    first: Timestamp
    last: Timestamp
    at_ms: int | None
    span_ms: int
    since_previous_ms: int | None


class TokenTotal(View):
    token_count: int | None
    prompt_tokens: int | None
    completion_tokens: int | None


class TokenStep(View):
    agent_name: str | None
    step_index: int | None
    model: str | None
    token_count: int | None
    prompt_tokens: int | None
    completion_tokens: int | None


class Tokens(View):
    total: TokenTotal
    steps: list[TokenStep]


class TraceExecutor(View):
    round: int | None
    parse_status: JsonValue
    answer_version: JsonValue
    hypotheses: list[JsonValue]
    missing_info: list[JsonValue]


class GateNoteView(View):
    """A gatekeeper warning or error; details it does not have are left out."""

    rule: str | MISSING = _absent_unless_given("the rule that spoke")
    severity: str | MISSING = _absent_unless_given("its severity")
    message: str | MISSING = _absent_unless_given("what it found")
    source_invocation_id: int | MISSING = _absent_unless_given("the invocation concerned")
    raw_path: str | MISSING = _absent_unless_given("the path concerned")
    hint: JsonValue | MISSING = _absent_unless_given("how to fix it")


class ClaimNote(GateNoteView):
    claim_id: str | None


class BindingNote(ClaimNote):
    binding_index: int | None


class BindingGate(View):
    status: GateStatus
    rule: str | None
    reason: str | None
    matched_text: str | None
    warnings: list[GateNoteView]
    errors: list[GateNoteView]


class CitedSource(View):
    source_invocation_id: JsonValue
    raw_path: JsonValue


class TraceBinding(View):
    """One evidence binding of a claim, next to what the invocation recorded."""

    binding_index: int
    tool_name: JsonValue
    source_invocation_id: JsonValue
    raw_path: JsonValue
    evidence_excerpt: JsonValue
    recorded_ref_text: str | None = Field(
        description="the ref text the invocation recorded for raw_path"
    )
    recorded_ref_status: Literal["found", "no_ref", "no_invocation", "unbound"]
    gatekeeper: BindingGate
    malformed: JsonValue | MISSING = _absent_unless_given(
        "the binding as given, when it is not an object"
    )
    executor_cited: CitedSource | MISSING = _absent_unless_given(
        "what the executor cited, when the gatekeeper back-filled it"
    )


class ClaimGate(View):
    status: GateStatus
    errors: list[GateNoteView]


class FactView(View):
    kind: str | None
    fact: str | None
    found: bool | None
    outcome: Literal["checked", "contradicted", "not stated"]
    detail: str  # what the fact was checked against, "" when the verdict did not say


class ClaimVerdict(View):
    status: Literal["SUPPORTED", "REFUTED", "NOT_ENOUGH_INFO"] | None
    reason: str | None
    raw_paths: list[JsonValue]
    facts: list[FactView]


class TraceClaim(View):
    claim_id: str
    claim_type: JsonValue
    claim_text: JsonValue
    support_level: JsonValue
    bindings: list[TraceBinding]
    gatekeeper: ClaimGate
    verifier: ClaimVerdict | None


class TraceGatekeeper(View):
    status: Literal["pass", "fail"] | None
    severity: str | None
    rule_set_version: str | None
    failed_rules: list[str]
    warnings: list[ClaimNote]
    errors: list[BindingNote]


class TraceVerifier(View):
    verdict: Verdict | None
    groundedness_score: float | None
    critical_fact_count: int | None
    rationale: str | None
    mode: str | None
    round: int | None
    traceability_version: str | None


class TraceGuard(View):
    ok: bool | None
    violations: list[JsonValue]
    replaced: bool | None


class TraceAnswer(View):
    """The composer's answer and the guard's judgement of it."""

    verdict: Verdict | None
    final_status: str | None
    answer_summary: str | None
    user_facing_answer: str | None
    recommended_actions: list[JsonValue]
    guard: TraceGuard


class TraceInvocation(View):
    source_invocation_id: int
    round: int | None
    tool_name: str | None
    input_params: JsonValue
    success: bool | None
    error_message: str | None
    duration_ms: int | None
    created_at: Timestamp | None
    at_ms: int | None
    output_preview: str | None
    retrieval_layer: str | None
    backend: str | None = None  # name (url) of the backend that answered; None before recorded
    evidence_status: str | None
    evidence_refs: list[JsonValue]


class TraceStep(View):
    agent_name: str | None
    step_index: int | None
    model: str | None
    prompt_version: str | None
    has_tool_call: bool | None
    duration_ms: int | None
    token_count: int | None
    prompt_tokens: int | None
    completion_tokens: int | None
    success: bool | None
    error_message: str | None
    finish_reason: str | None = None
    created_at: Timestamp | None
    event_id: str | None
    repair: bool = False  # the executor's repair turn (errors of the gatekeeper check sent back)
    budget: str | None = None  # the cuts that fitted the prompt to the context window


class Trace(View):
    """One run's trace: the replay questions of the contract, answered from the read models."""

    trace_version: Literal["v1"]
    run: TraceRun
    timeline: list[TimelineStage]
    tokens: Tokens
    executor: TraceExecutor
    claims: list[TraceClaim]
    gatekeeper: TraceGatekeeper | None
    verifier: TraceVerifier | None
    answer: TraceAnswer | None
    tool_invocations: list[TraceInvocation]
    agent_steps: list[TraceStep]
    prompt_audit: JsonValue
    aiops_rule_evaluation: JsonValue
