"""Frozen tool outputs: evidence tools that answer from recorded ``ToolInvoked`` events.

Why: a pipeline replay must re-run the roles against the evidence the run
actually saw, not against today's backends, and must never run a tool live. A
:class:`FrozenTool` has the real tool's name and parameter model, so the tool
gate validates and normalises parameters exactly as it did when the run was
recorded; a call is then matched by tool name + normalised parameters
(``params_model.model_dump(mode="json")``) to a recorded invocation. A call that
was never recorded is noted in :attr:`FrozenTools.misses` and answered as a
failed invocation, so no claim can cite it.

:class:`FailingTool` is the eval suites' fault injection: a tool whose backend
is down, recorded as a failed invocation the way a real outage would be.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from services.executor.tools import PARAMS_MODELS
from services.executor.tools.base import EvidenceTool, RunContext, ToolOutcome, failed_outcome
from tracebound.events import ToolBackend, ToolInvocation

FROZEN_LAYER = "frozen"


def call_key(tool_name: str, params: Mapping[str, Any]) -> str:
    """Tool name + normalised parameters, the identity of one call."""
    return tool_name + json.dumps(params, sort_keys=True, ensure_ascii=False, default=str)


def normalised(tool_name: str, params: Any) -> dict[str, Any] | None:
    """Recorded parameters as the gate would normalise them; None if they never validated."""
    model = PARAMS_MODELS.get(tool_name)
    if model is None or not isinstance(params, Mapping):
        return None
    try:
        return model.model_validate(dict(params)).model_dump(mode="json")
    except ValidationError:
        return None


def outcome_of(inv: ToolInvocation) -> ToolOutcome:
    """The recorded invocation as the outcome a live tool would have returned."""
    return ToolOutcome(
        output=dict(inv.output) if isinstance(inv.output, Mapping) else {"output": inv.output},
        retrieval_details=inv.retrieval_details
        or failed_outcome({}, "recorded without retrieval_details", FROZEN_LAYER).retrieval_details,
        success=inv.success,
        error_message=inv.error_message,
        retrieval_layer=inv.retrieval_layer,
        l0_match_count=inv.l0_match_count,
        l1_match_count=inv.l1_match_count,
        output_preview=inv.output_preview,
        backend=inv.backend,
    )


@dataclass(frozen=True, slots=True)
class Miss:
    """A call the recording cannot answer."""

    tool_name: str
    params: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"tool_name": self.tool_name, "params": self.params}


@dataclass
class FrozenTools:
    """A set of frozen tools sharing one pool of recorded invocations."""

    recorded: dict[str, list[ToolInvocation]] = field(default_factory=dict)
    misses: list[Miss] = field(default_factory=list)
    hits: int = 0

    @classmethod
    def of(cls, invocations: Iterable[ToolInvocation]) -> FrozenTools:
        frozen = cls()
        for inv in invocations:
            params = normalised(inv.tool_name, inv.input_params)
            if params is not None:
                frozen.recorded.setdefault(call_key(inv.tool_name, params), []).append(inv)
        return frozen

    def answer(self, tool_name: str, params: BaseModel) -> ToolOutcome:
        canonical = params.model_dump(mode="json")
        found = self.recorded.get(call_key(tool_name, canonical))
        if not found:
            self.misses.append(Miss(tool_name, canonical))
            message = "call not recorded in this run; a replay never runs tools live"
            return failed_outcome({}, message, FROZEN_LAYER)
        self.hits += 1
        # the first recorded answer; a repeat of the same call (a later round) gets the same
        return outcome_of(found[0])

    def tools(self) -> dict[str, EvidenceTool]:
        """The three tools by name, as ``ExecutorHandler`` takes them."""
        return {name: FrozenTool(name, model, self) for name, model in PARAMS_MODELS.items()}


@dataclass
class FrozenTool:
    name: str
    params_model: type[BaseModel]
    frozen: FrozenTools
    description: str = "recorded outputs of this tool"
    backend: ToolBackend = field(default_factory=lambda: ToolBackend(name=FROZEN_LAYER))

    def run(self, params: BaseModel, ctx: RunContext) -> ToolOutcome:
        return self.frozen.answer(self.name, params)


@dataclass
class FailingTool:
    """Fault injection: the wrapped tool's backend is down for every call."""

    name: str
    description: str
    params_model: type[BaseModel]
    backend: ToolBackend
    reason: str = "injected fault: backend unavailable"

    @classmethod
    def wrapping(cls, inner: EvidenceTool) -> FailingTool:
        return cls(inner.name, inner.description, inner.params_model, inner.backend)

    def run(self, params: BaseModel, ctx: RunContext) -> ToolOutcome:
        return failed_outcome({}, f"{self.name}: {self.reason}", "fault")


def with_faults(
    tools: Mapping[str, EvidenceTool], failing: Iterable[str]
) -> dict[str, EvidenceTool]:
    """``tools`` with every tool named in ``failing`` replaced by a :class:`FailingTool`."""
    down = set(failing)
    return {
        name: FailingTool.wrapping(tool) if name in down else tool for name, tool in tools.items()
    }
