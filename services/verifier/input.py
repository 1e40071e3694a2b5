"""What the verifier reads: the contract's verifier input (seed section 5), validated.

Why validate the envelope but not the executor output: the gatekeeper result,
parse status and trace come from our own code, so a malformed one is unusable
input (exit 2 in the CLI); the executor output is what is being judged, so its
defects become claim checks and verdicts, not input errors.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tracebound.errors import InvalidInputError
from tracebound.events import GatekeeperResult


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


def read_text(path: str) -> str:
    """The whole input; ``-`` is stdin."""
    try:
        if path == "-":
            return sys.stdin.read()
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise InvalidInputError(f"cannot read {path}: {reason}") from None
    except UnicodeDecodeError:
        raise InvalidInputError(f"{path} is not UTF-8 text") from None


def one_line(exc: ValidationError) -> str:
    """The first validation problem on one line, with a count of the rest."""
    errors = exc.errors()
    first = errors[0]
    location = "".join(
        f"[{part}]" if isinstance(part, int) else f".{part}" for part in first["loc"]
    ).lstrip(".")
    more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
    text = f"{location}: {first['msg']}{more}" if location else f"{first['msg']}{more}"
    return text.replace("\n", " ")


def json_documents(text: str) -> list[tuple[str, dict[str, Any]]]:
    """(label, object) pairs: the whole text as one JSON object, else one per JSON line."""
    if not text.strip():
        raise InvalidInputError("empty input")
    try:
        documents: list[tuple[str, Any]] = [("", json.loads(text))]
    except json.JSONDecodeError as whole:
        documents = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                documents.append((f"line {number}: ", json.loads(line)))
            except json.JSONDecodeError as exc:
                where = f"line {number}: " if documents else ""
                error = exc if documents else whole
                raise InvalidInputError(
                    f"{where}not JSON: {error.msg} (line {error.lineno}, column {error.colno})"
                ) from None
    objects: list[tuple[str, dict[str, Any]]] = []
    for label, document in documents:
        if not isinstance(document, dict):
            kind = "array" if isinstance(document, list) else type(document).__name__
            raise InvalidInputError(f"{label}expected a JSON object, got {kind}")
        objects.append((label, document))
    return objects


def parse_inputs(text: str) -> list[VerifierInput]:
    """Every verifier input of the text, in order; any defect raises InvalidInputError."""
    inputs = []
    for label, document in json_documents(text):
        try:
            inputs.append(VerifierInput.model_validate(document))
        except ValidationError as exc:
            raise InvalidInputError(f"{label}{one_line(exc)}") from None
    return inputs
