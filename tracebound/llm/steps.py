"""Turn each model call of a role into an ``AgentStep`` event (docs/contracts.md).

The trace must show what the model was asked and what it said without turning
the agent-steps topic into a copy of every prompt: prompts are versioned files
(``prompt_version`` names the one used) and may carry user data, so a step
records only a short summary of the *latest* user or tool message — never the
system prompt — and a short summary of the reply. Failed calls are steps too:
the trace must show that the model was tried and why the role fell back.
Every step records the server's ``finish_reason`` (``length`` on a failed step:
the reply was cut off), and calls read from the reply's text are labelled as
recovered, so a server whose tool parser does not fire is visible in the trace.

Every prompt passes the role's :class:`~tracebound.llm.budget.PromptBudget` here,
the one boundary all roles share: a prompt over the window is sent trimmed (the
step's ``model_input`` then opens with ``[budget …]`` naming the cuts) or not at
all (a failed step, kind ``over_budget``).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from tracebound import tracing
from tracebound.budget_note import budget_note
from tracebound.events import AgentStep, Event, Producer
from tracebound.llm.budget import Fitted, PromptBudget, Trim, budget_for
from tracebound.llm.port import ChatModel, ModelError, ModelReply

if TYPE_CHECKING:
    from tracebound.prompts import Prompt

INPUT_LIMIT = 300
OUTPUT_LIMIT = 500
THOUGHT_LIMIT = 500
_SUMMARY_ROLES = ("user", "tool")


class ModelCallFailed(ModelError):
    """A :class:`ModelError` that also carries the failed ``AgentStep`` to publish."""

    def __init__(self, cause: ModelError, step: AgentStep) -> None:
        super().__init__(
            cause.reason,
            kind=cause.kind,
            status_code=cause.status_code,
            finish_reason=cause.finish_reason,
        )
        self.step = step


def clip(text: str, limit: int) -> str:
    """At most ``limit`` characters (plus an ellipsis when something was cut)."""
    text = text.strip()
    return text if len(text) <= limit else text[:limit].rstrip() + "…"


def _content_text(content: Any) -> str:
    """Text of a message's content, whether a string or a list of content parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        parts = []
        for part in content:
            if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                parts.append(part["text"])
        return " ".join(parts)
    return str(content)


def summarize_input(messages: Sequence[Mapping[str, Any]], limit: int = INPUT_LIMIT) -> str:
    """Role and opening characters of the last user or tool message; never the system prompt."""
    for message in reversed(messages):
        role = str(message.get("role", ""))
        if role in _SUMMARY_ROLES:
            label = role
            if role == "tool" and message.get("tool_call_id"):
                label = f"tool[{message['tool_call_id']}]"
            return f"{label}: {clip(_content_text(message.get('content')), limit)}"
    return "(no user or tool message)"


def summarize_output(reply: ModelReply, limit: int = OUTPUT_LIMIT) -> str:
    """Tool-call names and arguments when the model called tools, else the reply text."""
    if reply.tool_calls:
        calls = "; ".join(f"{call.name}({call.raw_arguments})" for call in reply.tool_calls)
        label = "tool_calls (recovered from the reply text)" if reply.recovered else "tool_calls"
        text = f"{label}: {calls}"
        if reply.text.strip():
            text = f"{text} | text: {reply.text.strip()}"
        return clip(text, limit)
    return clip(reply.text, limit)


def budget_input(fitted: Fitted) -> str:
    """The step's input summary, opened by the cuts when the prompt had to be trimmed."""
    summary = summarize_input(fitted.messages)
    if not fitted.cuts:
        return summary
    head = f"[{budget_note(fitted.tokens, fitted.limit, fitted.cuts)}] "
    return head + clip(summary, max(INPUT_LIMIT - len(head), 40))


class StepRecorder:
    """Wraps a :class:`ChatModel` for one run and one agent; each call yields one step.

    ``step_index`` starts at ``first_index`` and increases by one per call,
    successful or not, so the trace keeps the order of attempts.
    """

    def __init__(
        self,
        model: ChatModel,
        *,
        run_id: str,
        agent_name: str,
        service: str,
        session_id: str | None = None,
        causation_id: str | None = None,
        prompt_version: str | None = None,
        first_index: int = 0,
        budget: PromptBudget | None = None,
    ) -> None:
        self.model = model
        self.budget = budget or budget_for(model)
        self.run_id = run_id
        self.session_id = session_id
        self.causation_id = causation_id
        self.agent_name = agent_name
        self.prompt_version = prompt_version
        self.service = service
        self.next_index = first_index
        self.steps: list[AgentStep] = []

    @classmethod
    def for_event(
        cls, model: ChatModel, prompt: Prompt, event: Event, service: str
    ) -> StepRecorder:
        """The recorder of a role reacting to ``event`` with ``prompt``: same run, caused by it."""
        return cls(
            model,
            run_id=event.run_id,
            session_id=event.session_id,
            causation_id=event.event_id,
            agent_name=prompt.name,
            prompt_version=prompt.version,
            service=service,
        )

    def _step(self, **payload: Any) -> AgentStep:
        step = AgentStep(
            run_id=self.run_id,
            session_id=self.session_id,
            causation_id=self.causation_id,
            producer=Producer(service=self.service),
            agent_name=self.agent_name,
            step_index=self.next_index,
            prompt_version=self.prompt_version,
            **payload,
        )
        self.next_index += 1
        self.steps.append(step)
        return step

    def _span_attributes(self, tools: Sequence[Mapping[str, Any]] | None) -> tracing.Attributes:
        return {
            "tracebound.role": self.service,
            "tracebound.run_id": self.run_id,
            "tracebound.agent": self.agent_name,
            "tracebound.step_index": self.next_index,
            "gen_ai.request.model": self.model.name,
            "tracebound.tools_offered": len(tools or ()),
        }

    def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        json_mode: bool = False,
        schema: type[BaseModel] | None = None,
        trims: Iterable[Trim] = (),
    ) -> tuple[ModelReply, AgentStep]:
        """Fit the prompt to the budget (``trims`` in order), call the model, record the step.

        Raises :class:`ModelCallFailed` on endpoint trouble and when no trim fits.
        """
        model_input = summarize_input(messages)
        started = time.monotonic()
        try:
            fitted = self.budget.fit(messages, tools, trims)
            model_input = budget_input(fitted)
            with tracing.span("model call", self._span_attributes(tools)) as span:
                reply = self.model.complete(
                    fitted.messages, tools=tools, json_mode=json_mode, schema=schema
                )
                span.set(_reply_attributes(reply))
        except ModelError as exc:
            step = self._step(
                model_input=model_input,
                model_output="",
                has_tool_call=False,
                duration_ms=int((time.monotonic() - started) * 1000),
                model=self.model.name,
                success=False,
                error_message=exc.reason,
                finish_reason=exc.finish_reason,
            )
            raise ModelCallFailed(exc, step) from exc
        step = self._step(
            model_input=model_input,
            model_output=summarize_output(reply),
            thought=clip(reply.reasoning, THOUGHT_LIMIT) if reply.reasoning else None,
            has_tool_call=reply.has_tool_call,
            duration_ms=reply.duration_ms,
            token_count=reply.total_tokens,
            prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens,
            model=reply.model,
            finish_reason=reply.finish_reason,
        )
        return reply, step


def _reply_attributes(reply: ModelReply) -> tracing.Attributes:
    attributes: dict[str, str | int | bool] = {
        "gen_ai.response.model": reply.model,
        "tracebound.tool_calls": len(reply.tool_calls),
    }
    if reply.finish_reason:
        attributes["gen_ai.response.finish_reasons"] = reply.finish_reason[:40]
    if reply.prompt_tokens is not None:
        attributes["gen_ai.usage.input_tokens"] = reply.prompt_tokens
    if reply.completion_tokens is not None:
        attributes["gen_ai.usage.output_tokens"] = reply.completion_tokens
    if reply.deadline_s is not None:
        attributes["tracebound.deadline_s"] = str(reply.deadline_s)
    return attributes


__all__ = [
    "INPUT_LIMIT",
    "OUTPUT_LIMIT",
    "ModelCallFailed",
    "StepRecorder",
    "budget_input",
    "clip",
    "summarize_input",
    "summarize_output",
]
