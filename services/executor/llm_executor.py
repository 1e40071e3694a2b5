"""The model executor: the planned calls first, a tool-calling loop, then executor_evidence_v2.

Evidence does not depend on the model calling tools: the calls the plan records
run in code first, and the conversation opens with them as an assistant turn of
tool calls followed by their results. A model that never calls a tool therefore
still writes its claims over the planned evidence, in one model turn; its own
calls only add evidence. The system prompt then does not repeat the plan's steps.
A tool with no backend configured is not offered (:func:`tool_specs`). The
``small`` profile offers no tool specs when the plan has calls, which saves their
tokens in every turn.

Every call, planned or the model's, passes the :class:`ToolGate` (budget,
duplicates, failures, timeouts, parameter schemas, no widening), and the model
only ever sees the evidence refs that code built from the tool output — the text
it must copy verbatim into its excerpts, capped to the context budget
(:mod:`services.executor.tool_view`). Tool text is sent as data inside a tool
message, never as instructions.

The final reply counts only when its shape is ``executor_evidence_v2``
(:class:`ExecutorEvidenceShape`); a round whose calls the server left in the
reply text is ``repaired`` at best, so the parse status says the tool protocol
needed help. No ``response_format`` is sent here: the tool turns must stay free
to call tools, and a server decoding to a schema would forbid that.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from services.executor.evidence_shape import ExecutorEvidenceShape
from services.executor.follow_ups import follow_up_calls
from services.executor.gate import Refusal, ToolGate
from services.executor.tool_view import ToolView, invalid_arguments
from services.executor.tools.base import NO_BACKEND, EvidenceTool
from tracebound.events import PlannedCall, PlanSnapshot, RetryContext, ToolInvocation
from tracebound.llm import (
    ParseOutcome,
    StepRecorder,
    ToolCall,
    assistant_message,
    parse_model,
)
from tracebound.prompts import Prompt

_SCHEMA_NOISE = frozenset(
    {"title", "additionalProperties", "maxLength", "minLength", "maximum", "minimum"}
)


def compact_schema(value: Any) -> Any:
    """A JSON schema without titles, limits or null defaults; ``X | None`` read as ``X``.

    The gate validates every call against the full parameter model, so what the
    model is shown only has to name the fields, their types, defaults and ranges.
    """
    if isinstance(value, list):
        return [compact_schema(v) for v in value]
    if not isinstance(value, Mapping):
        return value
    options = value.get("anyOf")
    if isinstance(options, list):
        kept = [o for o in options if not (isinstance(o, Mapping) and o.get("type") == "null")]
        if len(kept) == 1:
            rest = {k: v for k, v in value.items() if k != "anyOf"}
            return compact_schema({**kept[0], **rest})
    return {
        k: compact_schema(v)
        for k, v in value.items()
        if k not in _SCHEMA_NOISE and not (k == "default" and v is None)
    }


def tool_specs(tools: Mapping[str, EvidenceTool]) -> list[dict[str, Any]] | None:
    """The specs the model may call; None when no tool has a backend.

    A tool without a backend is not offered: every call of it fails, saying what to
    configure, so its spec would cost tokens in every turn for nothing. A planned
    call of it still runs, and its failure still reaches the model and the trace.
    """
    specs = [
        {
            "name": tool.name,
            "description": tool.description,
            "parameters": compact_schema(tool.params_model.model_json_schema()),
        }
        for tool in tools.values()
        if tool.backend.name != NO_BACKEND
    ]
    return specs or None


def _run(gate: ToolGate, call: ToolCall) -> ToolInvocation | Refusal:
    """The gate's answer to one call; arguments that are not a JSON object are refused."""
    if call.arguments is None:
        return invalid_arguments(call)
    return gate.call(call.name, call.arguments)


EXAMPLE = (
    '{"answer_version": "executor_evidence_v2", "claims": [{"claim_id": "claim-1", '
    '"claim_type": "observation", "claim_text": "<one micro-fact>", "support_level": "direct", '
    '"evidence_bindings": [{"tool_name": "<tool>", "source_invocation_id": 1, '
    '"raw_path": "<raw_path of the ref>", "evidence_excerpt": "<verbatim text of the ref>"}]}], '
    '"hypotheses": [], "recommended_actions": [], "missing_info": []}'
)
# The small profile: the fields, without a worked example.
SMALL_EXAMPLE = (
    "answer_version executor_evidence_v2; claims[] of claim_id, claim_type, claim_text, "
    "support_level, evidence_bindings[] of tool_name, source_invocation_id, raw_path, "
    "evidence_excerpt; hypotheses[]; recommended_actions[]; missing_info[]."
)


# The scope line of the system prompt: a broad run is not told the narrow rules.
NARROW_SCOPE = (
    "narrow: 1-2 `observation` or `negative_observation` claims, "
    "no root cause, fix or runbook text as fact"
)
BROAD_SCOPE = "broad (full diagnosis of the question)"


def _retry_text(retry: RetryContext | None) -> str:
    """The prompt's section on why the previous round was not accepted, without null
    fields; nothing on a first round."""
    if retry is None:
        return ""
    shown = json.dumps(retry.model_dump(mode="json", exclude_none=True), ensure_ascii=False)
    return f"\nRetry context (why the last round was not accepted): {shown}\n"


def _plan_text(plan: PlanSnapshot, planned: Sequence[PlannedCall]) -> str:
    """The prompt's plan section: the plan's steps, but nothing when its calls are shown
    as run (the calls come from the routed skill, the steps' text only rewords them)."""
    if planned:
        return ""
    return "\nPlan:\n" + "\n".join(plan.planner_plan.plan) + "\n"


def planned_turn(
    gate: ToolGate, view: ToolView, planned: Sequence[PlannedCall], first: int = 1
) -> list[dict[str, Any]]:
    """The plan's calls, run now through the gate, as a tool-call turn and its results.

    A planned call the gate finds a duplicate of an earlier one is left out: the
    model already sees that call's result.
    """
    if not planned:
        return []
    ran: list[tuple[ToolCall, ToolInvocation | Refusal]] = []
    for index, call in enumerate(planned, start=first):
        params = dict(call.params) if isinstance(call.params, Mapping) else {}
        raw = json.dumps(params, ensure_ascii=False)
        made = ToolCall(id=f"plan-{index}", name=call.tool, arguments=params, raw_arguments=raw)
        result = _run(gate, made)
        if not (isinstance(result, Refusal) and result.duplicate):
            ran.append((made, result))
    if not ran:
        return []
    calls = [call for call, _result in ran]
    turn = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": c.raw_arguments},
            }
            for c in calls
        ],
    }
    return [turn, *view.answer(ran)]


@dataclass(frozen=True, slots=True)
class ModelRound:
    """The model's last reply of a round, parsed, and the conversation that led to it.

    The conversation is kept so a repair turn can continue it: the model then
    sees its own tool results again instead of a fresh, context-free prompt, and
    ``view`` so the repair prompt is fitted to the budget the same way.
    """

    raw: str
    outcome: ParseOutcome
    messages: list[dict[str, Any]]
    view: ToolView | None = None


def run_llm_round(
    prompt: Prompt,
    recorder: StepRecorder,
    gate: ToolGate,
    *,
    query: str,
    language: str,
    plan: PlanSnapshot,
    retry: RetryContext | None,
    max_turns: int,
    planned: Sequence[PlannedCall] = (),
) -> ModelRound:
    """Raises ``ModelCallFailed`` on endpoint trouble; returns the round's final reply.

    ``planned`` are the plan's calls: they run before the first model turn, and
    so does the log search around the first change they show (:mod:`onset_logs`).
    """
    scope = NARROW_SCOPE if plan.narrow_scope else BROAD_SCOPE
    system = prompt.render(
        language=language,
        plan=_plan_text(plan, planned),
        scope=scope,
        retry_context=_retry_text(retry),
        example=SMALL_EXAMPLE if recorder.budget.small else EXAMPLE,
    )
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system},
        {"role": "user", "content": query},
    ]
    view = ToolView(recorder.budget)
    messages += planned_turn(gate, view, planned)
    follow = [] if plan.narrow_scope else follow_up_calls(gate.invocations, planned)
    if follow:  # the onset's logs and the failing dependency's state, as in rules mode
        messages += planned_turn(gate, view, follow, first=len(planned) + 1)
    specs = None if recorder.budget.small and planned else tool_specs(gate.tools)
    recovered = 0
    for _turn in range(max_turns):
        reply, _step = recorder.complete(messages, tools=specs, trims=view.trims(messages))
        if not reply.tool_calls or specs is None:
            outcome, _shape = parse_model(reply.text, ExecutorEvidenceShape)
            outcome = ParseOutcome(outcome.status, outcome.detail, view.real_ids(outcome.value))
            if recovered:
                note = f"{recovered} tool call(s) recovered from the reply text"
                outcome = outcome.noting(note)
            return ModelRound(reply.text, outcome, messages, view)
        recovered += sum(1 for call in reply.tool_calls if call.recovered)
        messages.append(assistant_message(reply))
        messages += view.answer([(call, _run(gate, call)) for call in reply.tool_calls])
    detail = f"no final answer within {max_turns} model turns"
    return ModelRound("", ParseOutcome(status="missing", detail=detail), messages, view)
