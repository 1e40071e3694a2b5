"""The one llm→rules decision every role makes.

Each role runs its model path and, when the endpoint fails or the reply is not
usable, its deterministic rules path. Written once so that every role records
the same thing about it: who decided (``llm``, ``rules``, ``rules-fallback``),
the model steps to publish, and — on a fallback — a :class:`ModelFallback` that
says why, which the role puts on its event so the answer and the trace show it.
The :class:`FallbackMonitor` counts and logs each decision, so a deployment that
answers from rules cannot look like a healthy model deployment.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, Literal, TypeVar

from tracebound.events import AgentStep, Event, ModelFallback
from tracebound.llm.monitor import FallbackMonitor
from tracebound.llm.port import ChatModel
from tracebound.llm.steps import ModelCallFailed, StepRecorder

if TYPE_CHECKING:
    from tracebound.prompts import Prompt

T = TypeVar("T")
DecisionMode = Literal["rules", "llm", "rules-fallback"]
RULES: DecisionMode = "rules"
LLM: DecisionMode = "llm"
FALLBACK: DecisionMode = "rules-fallback"
INVALID_OUTPUT = "invalid_output"


class ReplyRejected(Exception):
    """The model answered, but not with something the role can use.

    A model path raises it with a short reason (a parse or shape error, never
    the reply itself); the role then answers from its rules.
    """

    def __init__(self, reason: str, *, kind: str = INVALID_OUTPUT) -> None:
        super().__init__(reason)
        self.reason = reason
        self.kind = kind


@dataclass(frozen=True, slots=True)
class Decision(Generic[T]):
    """A role's result, who produced it, the model steps taken and why it fell back."""

    value: T
    mode: DecisionMode
    steps: tuple[AgentStep, ...] = ()
    fallback: ModelFallback | None = None


def recorder_for(
    model: ChatModel | None, prompt: Prompt, event: Event, service: str
) -> StepRecorder | None:
    """The step recorder of a role reacting to ``event``; None when it has no model."""
    return None if model is None else StepRecorder.for_event(model, prompt, event, service)


def rules_only(rules_path: Callable[[], T]) -> Decision[T]:
    """The result of a role that was not asked to (or need not) call its model."""
    return Decision(rules_path(), RULES)


def decide(
    role: str,
    recorder: StepRecorder | None,
    model_path: Callable[[StepRecorder], T],
    rules_path: Callable[[], T],
    monitor: FallbackMonitor,
) -> Decision[T]:
    """Run ``model_path`` and, when it fails, ``rules_path``; count and log the outcome.

    Without a recorder (no model configured) the rules path runs as the role's
    chosen mode, not as a fallback. ``model_path`` signals trouble by raising
    :class:`ModelCallFailed` (endpoint) or :class:`ReplyRejected` (unusable
    reply); anything else is a bug and propagates.
    """
    if recorder is None:
        return rules_only(rules_path)
    try:
        value = model_path(recorder)
    except (ModelCallFailed, ReplyRejected) as exc:
        fallback = ModelFallback(role=role, kind=exc.kind, reason=exc.reason)
        monitor.fell_back(fallback, run_id=recorder.run_id)
        return Decision(rules_path(), FALLBACK, tuple(recorder.steps), fallback)
    monitor.answered(role)
    return Decision(value, LLM, tuple(recorder.steps))


def gathered(
    *fallbacks: ModelFallback | None, earlier: Iterable[ModelFallback] = ()
) -> tuple[ModelFallback, ...]:
    """The fallbacks a role carries forward: those of the roles before it, then its own."""
    return (*earlier, *(f for f in fallbacks if f is not None))


__all__ = [
    "FALLBACK",
    "INVALID_OUTPUT",
    "LLM",
    "RULES",
    "Decision",
    "DecisionMode",
    "ReplyRejected",
    "decide",
    "gathered",
    "recorder_for",
    "rules_only",
]
