"""The executor role: a plan (or a retry) in; ``ToolInvoked``s and one ``EvidenceProduced`` out.

All outputs of one round — every tool invocation, the model steps and the
evidence — are returned together, so the runtime publishes them in one Kafka
transaction: a round is recorded whole or not at all.

The rules round runs the calls the plan records (``plan.execution``), so a
replay of an old plan runs what was planned then, whatever the skill files say
now; retries carry the same plan. A plan recorded before plans carried their
calls is read from its lines when the rules planner wrote them, and only a
model-written one is derived again from today's skill catalogue.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from services.executor.claims import build_evidence, diagnosis_findings, with_findings
from services.executor.follow_ups import follow_up_calls
from services.executor.gate import SHARED_POOL, ToolGate, ToolPool
from services.executor.llm_executor import run_llm_round
from services.executor.repair import settle
from services.executor.settings import ExecutorSettings
from services.executor.tools.base import EvidenceTool
from services.gatekeeper import Ruleset
from services.planner.planning import described_calls, execution_plan
from services.planner.scope import read_focus
from services.planner.skills import Skill
from tracebound.events import (
    DiagnosisRequest,
    Event,
    EvidenceProduced,
    ExecutionPlan,
    ParseStatus,
    PlanProduced,
    PlanSnapshot,
    PromptRef,
    RetryContext,
    RetryRequested,
    ToolInvoked,
)
from tracebound.llm import ChatModel, StepRecorder
from tracebound.llm.fallback import decide, recorder_for
from tracebound.llm.monitor import FallbackMonitor
from tracebound.llm.question import shown_question
from tracebound.prompts import Prompt, PromptSet, prompt_audit

SERVICE = "executor"
NARROW_TYPES = ("observation", "negative_observation")


def enforce_scope(
    structured: dict[str, Any], narrow: bool, max_claims: int
) -> tuple[dict[str, Any], str]:
    """The narrow-task contract (docs/contracts.md): keep only 1-2 observation claims."""
    if not narrow or not isinstance(structured.get("claims"), list):
        return structured, ""
    claims = [c for c in structured["claims"] if isinstance(c, Mapping)]
    kept = [c for c in claims if c.get("claim_type") in NARROW_TYPES][:max_claims]
    removed = len(structured["claims"]) - len(kept)
    if not removed:
        return structured, ""
    note = f"; narrow scope: removed {removed} claim(s) of another type or over {max_claims}"
    return {**structured, "claims": kept}, note


@dataclass(frozen=True, slots=True)
class Job:
    """One executor round, whether a first plan or a retry asked for it."""

    plan: PlanSnapshot
    request: DiagnosisRequest
    round_no: int
    retry: RetryContext | None

    @classmethod
    def of(cls, event: PlanProduced | RetryRequested) -> Job:
        if isinstance(event, PlanProduced):
            return cls(event.plan, event.request, 1, None)
        ctx = event.retry_context
        return cls(event.plan, event.request, ctx.round, ctx)


@dataclass
class RoundResult:
    structured: dict[str, Any] | None
    raw: str
    status: ParseStatus
    steps: list[Event] = field(default_factory=list)
    prompts: list[Prompt] = field(default_factory=list)


class ExecutorHandler:
    def __init__(
        self,
        tools: Mapping[str, EvidenceTool],
        skills: Sequence[Skill],
        settings: ExecutorSettings | None = None,
        model: ChatModel | None = None,
        ruleset: Ruleset | None = None,
        *,
        prompts: PromptSet | None = None,
        monitor: FallbackMonitor | None = None,
        tool_pool: ToolPool = SHARED_POOL,
    ) -> None:
        """``ruleset`` is the gatekeeper's; with it, output it would reject gets a repair turn.

        ``tool_pool`` runs the tool calls: size it for the runs the process keeps in flight.
        """
        self.tools = dict(tools)
        self.skills = {s.name: s for s in skills}
        self.settings = settings or ExecutorSettings()
        self.model = model
        self.ruleset = ruleset
        self.prompts = prompts or PromptSet.active()
        self.monitor = monitor or FallbackMonitor()
        self.tool_pool = tool_pool

    def __call__(self, event: PlanProduced | RetryRequested) -> list[Event]:
        job = Job.of(event)
        execution, skill_refs = self._execution(job)
        gate = ToolGate(
            self.tools,
            self.settings,
            event.run_id,
            job.round_no,
            job.plan.narrow_scope,
            job.request,
            self.tool_pool,
        )
        prompt = self.prompts.get("chat-executor")
        decision = decide(
            SERVICE,
            recorder_for(self.model, prompt, event, SERVICE),
            lambda rec: self._llm_round(rec, prompt, job, gate, execution),
            lambda: self._rules_round(gate, job, execution),
            self.monitor,
        )
        result = decision.value
        result.steps = list(decision.steps)
        if decision.fallback is not None:  # the model failed: say why on the parse status
            detail = f"rules executor output (model failed: {decision.fallback.reason})"
            result.status = ParseStatus(status="valid", detail=detail, fallback=decision.fallback)
        modelled = decision.fallback is None and self.model is not None
        if result.structured is not None and modelled and not job.plan.narrow_scope:
            # the diagnosis rules' findings are code's, whatever the model wrote
            found = diagnosis_findings(gate.invocations, job.request.language)
            result.structured = with_findings(result.structured, *found)
        if result.structured is not None:
            result.structured, note = enforce_scope(
                result.structured, job.plan.narrow_scope, self.settings.max_claims_narrow
            )
            if note:
                result.status = result.status.model_copy(
                    update={"detail": result.status.detail + note}
                )
        invoked = [event.reply(ToolInvoked, SERVICE, tool_invocation=i) for i in gate.invocations]
        evidence = event.reply(
            EvidenceProduced,
            SERVICE,
            executor_final_answer=result.raw,
            executor_structured_output=result.structured,
            executor_output_parse_status=result.status,
            tool_trace=tuple(gate.invocations),
            round=job.round_no,
            request=job.request,
            plan=job.plan,
            prompt_audit=prompt_audit(result.prompts, skill_refs),
        )
        return [*result.steps, *invoked, evidence]

    def _execution(self, job: Job) -> tuple[ExecutionPlan, tuple[PromptRef, ...]]:
        """The calls to run and the skill the audit names for them.

        The plan's recorded calls, with the skill version the plan records; for a
        legacy plan, the calls its lines name, else those today's skill file gives.
        """
        plan = job.plan
        name = plan.planner_plan.selected_skill
        skill = self.skills.get(name or "")
        recorded = (
            PromptRef(
                name=name,
                version=plan.skill_version or "",
                resource=skill.resource if skill else "",
            )
            if name
            else None
        )
        if plan.execution is not None:
            return plan.execution, (recorded,) if recorded else ()
        focus = read_focus(job.request)
        described = described_calls(plan)
        if described is not None:
            execution = ExecutionPlan(
                calls=described, services=focus.services, alert_names=focus.alert_names
            )
            return execution, (recorded,) if recorded else ()
        derived = execution_plan(focus, skill, job.request, plan.narrow_scope)
        return derived, (skill.ref(),) if skill else ()

    def _llm_round(
        self,
        recorder: StepRecorder,
        prompt: Prompt,
        job: Job,
        gate: ToolGate,
        execution: ExecutionPlan,
    ) -> RoundResult:
        """Raises ``ModelCallFailed`` on endpoint trouble, a failing repair call included;
        an unusable reply is still a round (after its repair turn, when that is on).

        The plan's calls run first, in code, as in the rules round; the model's own
        calls only add evidence."""
        first = run_llm_round(
            prompt,
            recorder,
            gate,
            query=shown_question(job.request.query, job.request.alerts),
            language=job.request.language,
            plan=job.plan,
            retry=job.retry,
            max_turns=self.settings.max_model_turns,
            planned=execution.calls,
        )
        ruleset = self.ruleset if self.settings.repair_turn else None
        settled = settle(recorder, first, gate, ruleset)
        return RoundResult(settled.value, settled.raw, settled.status, prompts=[prompt])

    def _rules_round(self, gate: ToolGate, job: Job, execution: ExecutionPlan) -> RoundResult:
        narrow = job.plan.narrow_scope
        for call in execution.calls:
            gate.call(call.tool, call.params)
        for follow in () if narrow else follow_up_calls(gate.invocations, execution.calls):
            gate.call(follow.tool, follow.params)
        limit = self.settings.max_claims_narrow if narrow else self.settings.max_claims_broad
        structured = build_evidence(
            gate.invocations,
            execution,
            job.request.language,
            alerts=job.request.alerts,
            narrow=narrow,
            max_claims=limit,
        )
        status = ParseStatus(status="valid", detail="rules executor output")
        return RoundResult(structured, json.dumps(structured, ensure_ascii=False), status)
