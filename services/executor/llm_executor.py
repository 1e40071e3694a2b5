"""The model executor: a tool-calling loop through the gate, then executor_evidence_v2.

The model chooses the calls, but every call passes the :class:`ToolGate` (budget,
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

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from services.executor.evidence_shape import ExecutorEvidenceShape
from services.executor.gate import Refusal, ToolGate
from services.executor.tool_view import ToolView, invalid_arguments
from services.executor.tools.base import EvidenceTool
from tracebound.events import PlanSnapshot, RetryContext, ToolInvocation
from tracebound.llm import (
    ParseOutcome,
    StepRecorder,
    ToolCall,
    assistant_message,
    parse_model,
)
from tracebound.prompts import Prompt


def tool_specs(tools: Mapping[str, EvidenceTool]) -> list[dict[str, Any]]:
    return [
        {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.params_model.model_json_schema(),
        }
        for tool in tools.values()
    ]


def _run(gate: ToolGate, call: ToolCall) -> ToolInvocation | Refusal:
    """The gate's answer to one call; arguments that are not a JSON object are refused."""
    if call.arguments is None:
        return invalid_arguments(call)
    return gate.call(call.name, call.arguments)


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
) -> ModelRound:
    """Raises ``ModelCallFailed`` on endpoint trouble; returns the round's final reply."""
    scope = "narrow" if plan.narrow_scope else "broad (full diagnosis of the question)"
    system = prompt.render(
        query=query,
        language=language,
        plan="\n".join(plan.planner_plan.plan),
        scope=scope,
        retry_context=retry.model_dump() if retry else None,
        evidence="",
    )
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system},
        {"role": "user", "content": query},
    ]
    specs = tool_specs(gate.tools)
    recovered = 0
    view = ToolView(recorder.budget)
    for _turn in range(max_turns):
        reply, _step = recorder.complete(messages, tools=specs, trims=view.trims(messages))
        if not reply.tool_calls:
            outcome, _shape = parse_model(reply.text, ExecutorEvidenceShape)
            if recovered:
                note = f"{recovered} tool call(s) recovered from the reply text"
                outcome = outcome.noting(note)
            return ModelRound(reply.text, outcome, messages, view)
        recovered += sum(1 for call in reply.tool_calls if call.recovered)
        messages.append(assistant_message(reply))
        messages += view.answer([(call, _run(gate, call)) for call in reply.tool_calls])
    detail = f"no final answer within {max_turns} model turns"
    return ModelRound("", ParseOutcome(status="missing", detail=detail), messages, view)
