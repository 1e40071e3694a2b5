"""What the verifier reads: the contract's verifier input (seed section 5), validated.

Why validate the envelope but not the executor output: the gatekeeper result,
parse status and trace come from our own code, so a malformed one is unusable
input (exit 2 in the CLI); the executor output is what is being judged, so its
defects become claim checks and verdicts, not input errors.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from tracebound.events import GatekeeperResult
from tracebound.jsonio import parse_each, read_text

__all__ = ["VerifierInput", "input_from_event", "parse_inputs", "read_text"]


class _In(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)


class ParseStatusIn(_In):
    status: Literal["valid", "invalid", "missing"]
    detail: str = ""


class CheckedBindingIn(_In):
    claim_id: str
    binding_index: int | None = None
    tool_name: str | None = None
    source_invocation_id: int | None = None
    raw_path: str | None = None
    matched_text: str | None = None
    status: Literal["pass", "fail", "backfilled", "skipped"]
    rule: str | None = None
    reason: str | None = None


class GatekeeperResultIn(_In):
    status: Literal["pass", "fail"]
    severity: Literal["none", "low_confid", "reject"]
    rule_set_version: str
    rules: list[dict[str, Any]] = Field(default_factory=list)
    checked_bindings: list[CheckedBindingIn] = Field(default_factory=list)
    failed_rules: list[str] = Field(default_factory=list)
    warnings: list[dict[str, Any]] = Field(default_factory=list)
    errors: list[dict[str, Any]] = Field(default_factory=list)


class RetryContextIn(_In):
    round: int = Field(ge=1)
    reasons: list[str] = Field(default_factory=list)
    failed_claims: list[str] = Field(default_factory=list)
    missing_info: list[str] = Field(default_factory=list)


class AlertIn(_In):
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    status: str = "firing"


class VerifierInput(_In):
    """One verifier request."""

    original_query: str
    executor_final_answer: str = ""
    executor_structured_output: dict[str, Any] | None
    executor_output_parse_status: ParseStatusIn
    tool_trace_summary: list[dict[str, Any]] = Field(default_factory=list)
    gatekeeper_result: GatekeeperResultIn
    retry_context: RetryContextIn | None = None
    round: int = Field(default=1, ge=1)
    mode: Literal["CHAT", "AIOPS"] = "CHAT"
    alerts: list[AlertIn] = Field(default_factory=list)


def input_from_event(event: GatekeeperResult) -> VerifierInput:
    """The verifier input carried by a ``GatekeeperResult`` event (no retry context)."""
    data = event.to_json()
    return VerifierInput.model_validate(
        {
            "original_query": data["original_query"],
            "executor_final_answer": data["executor_final_answer"],
            "executor_structured_output": data["executor_structured_output"],
            "executor_output_parse_status": data["executor_output_parse_status"],
            "tool_trace_summary": data["tool_trace_summary"],
            "gatekeeper_result": data["gatekeeper_result"],
            "round": data["round"],
            "mode": data["request"]["mode"],
            "alerts": data["request"]["alerts"],
        }
    )


def parse_inputs(text: str) -> list[VerifierInput]:
    """Every verifier input of the text, in order; any defect raises InvalidInputError."""
    return [model for _raw, model in parse_each(text, VerifierInput)]
