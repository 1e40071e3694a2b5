"""The model executor: a tool-calling loop through the gate, then executor_evidence_v2.

The model chooses the calls, but every call passes the :class:`ToolGate` (budget,
duplicates, failures, timeouts, parameter schemas, no widening), and the model
only ever sees the evidence refs that code built from the tool output — the text
it must copy verbatim into its excerpts, capped to the context budget
(:mod:`services.executor.tool_view`). Tool text is sent as data inside a tool
message, never as instructions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from services.executor.gate import Refusal, ToolGate
from services.executor.tool_view import ToolView, invalid_arguments
from services.executor.tools.base import EvidenceTool
from tracebound.events import PlanSnapshot, RetryContext, ToolInvocation
from tracebound.llm import (
    ParseOutcome,
    StepRecorder,
    ToolCall,
    assistant_message,
    parse_json_object,
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
) -> tuple[str, ParseOutcome]:
    """Raises ``ModelCallFailed`` on endpoint trouble; returns (raw text, parse outcome)."""
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
    view = ToolView(recorder.budget)
    for _turn in range(max_turns):
        reply, _step = recorder.complete(messages, tools=specs, trims=view.trims(messages))
        if not reply.tool_calls:
            return reply.text, parse_json_object(reply.text)
        messages.append(assistant_message(reply))
        messages += view.answer([(call, _run(gate, call)) for call in reply.tool_calls])
    detail = f"no final answer within {max_turns} model turns"
    return "", ParseOutcome(status="missing", detail=detail)
