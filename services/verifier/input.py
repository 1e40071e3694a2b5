"""What the verifier reads: the contract's verifier input (docs/contracts.md).

The service builds it from the ``GatekeeperResult`` event's own records; the
CLI parses its JSON into the same records, so both judge one shape.

Why validate the envelope but not the executor output: the gatekeeper result,
parse status and trace come from our own code, so a malformed one is unusable
input (exit 2 in the CLI); the executor output is what is being judged, so its
defects become claim checks and verdicts, not input errors.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tracebound.events import (
    PARSE_STATES,
    Alert,
    GatekeeperOutcome,
    GatekeeperResult,
    ParseStatus,
    RetryContext,
    ToolTraceEntry,
)
from tracebound.jsonio import parse_each, read_text

__all__ = [
    "VerifierInput",
    "input_from_event",
    "parse_inputs",
    "read_text",
]

BINDING_STATUSES = ("pass", "fail", "backfilled", "skipped")


def _entries(value: Any, record: type[BaseModel], defaults: dict[str, Any]) -> Any:
    """Input objects as ``record`` takes them: ``defaults`` filled in, other fields ignored.

    The CLI's input accepts more than the records (a partial trace line, an
    alert with extra webhook fields); what the verifier does not read may be left out.
    """
    if not isinstance(value, list):
        return value
    return [
        {**defaults, **{k: v for k, v in item.items() if k in record.model_fields}}
        if isinstance(item, dict)
        else item
        for item in value
    ]


class VerifierInput(BaseModel):
    """One verifier request; unknown top-level fields are kept (``language`` is read)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    original_query: str
    executor_final_answer: str = ""
    executor_structured_output: dict[str, Any] | None
    executor_output_parse_status: ParseStatus
    tool_trace_summary: tuple[ToolTraceEntry, ...] = ()
    gatekeeper_result: GatekeeperOutcome
    retry_context: RetryContext | None = None
    round: int = Field(default=1, ge=1)
    mode: Literal["CHAT", "AIOPS"] = "CHAT"
    alerts: tuple[Alert, ...] = ()

    @field_validator("alerts", mode="before")
    @classmethod
    def _alerts(cls, value: Any) -> Any:
        """An input alert without a status is a firing one (the webhook's default)."""
        return _entries(value, Alert, {"status": "firing"})

    @field_validator("tool_trace_summary", mode="before")
    @classmethod
    def _trace(cls, value: Any) -> Any:
        """Trace entries need only what the verifier reads: the invocation and its tool."""
        return _entries(value, ToolTraceEntry, {"success": True, "evidence_status": "unknown"})

    @field_validator("executor_output_parse_status")
    @classmethod
    def _known_parse_status(cls, value: ParseStatus) -> ParseStatus:
        if value.status not in PARSE_STATES:
            raise ValueError(f"status must be one of {', '.join(PARSE_STATES)}")
        return value

    @field_validator("gatekeeper_result")
    @classmethod
    def _known_binding_status(cls, value: GatekeeperOutcome) -> GatekeeperOutcome:
        for binding in value.checked_bindings:
            if binding.status not in BINDING_STATUSES:
                raise ValueError(f"binding status must be one of {', '.join(BINDING_STATUSES)}")
        return value

    @field_validator("retry_context")
    @classmethod
    def _counted_round(cls, value: RetryContext | None) -> RetryContext | None:
        if value is not None and value.round < 1:
            raise ValueError("retry_context.round must be at least 1")
        return value


def input_from_event(event: GatekeeperResult) -> VerifierInput:
    """The verifier input carried by a ``GatekeeperResult`` event (no retry context)."""
    return VerifierInput(
        original_query=event.original_query,
        executor_final_answer=event.executor_final_answer,
        executor_structured_output=event.executor_structured_output,
        executor_output_parse_status=event.executor_output_parse_status,
        tool_trace_summary=event.tool_trace_summary,
        gatekeeper_result=event.gatekeeper_result,
        round=event.round,
        mode=event.request.mode,
        alerts=event.request.alerts,
    )


def parse_inputs(text: str) -> list[VerifierInput]:
    """Every verifier input of the text, in order; any defect raises InvalidInputError."""
    return [model for _raw, model in parse_each(text, VerifierInput)]
