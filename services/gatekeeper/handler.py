"""The gatekeeper role: ``EvidenceProduced`` in, ``GatekeeperResult`` out.

Pure: it needs nothing but the event (the executor's structured output and the
tool trace recorded by code travel inside it) and the rule set, so it can be
replayed over recorded evidence with a different rules file.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from services.gatekeeper.check import check
from services.gatekeeper.ruleset import Ruleset
from tracebound.events import (
    CheckedBinding,
    Event,
    EvidenceProduced,
    GatekeeperOutcome,
    GatekeeperResult,
    GateNote,
    RuleMeta,
    ToolInvocation,
    ToolTraceEntry,
)

SERVICE = "gatekeeper"
INPUT_SUMMARY_CHARS = 200


def invocation_view(inv: ToolInvocation) -> dict[str, Any]:
    """The gatekeeper's view of a recorded invocation (the CLI input shape)."""
    view: dict[str, Any] = {
        "id": inv.source_invocation_id,
        "tool_name": inv.tool_name,
        "success": inv.success,
    }
    details = inv.retrieval_details
    if details is not None:
        view["retrieval_details"] = {
            "evidence_status": details.evidence_status,
            "evidence_refs": [
                {"raw_path": r.raw_path, "text": r.text} for r in details.evidence_refs
            ],
        }
    return view


def trace_summary(trace: Sequence[ToolInvocation]) -> tuple[ToolTraceEntry, ...]:
    """``tool_trace_summary``: one compact line per invocation, for the verifier and audits."""
    entries = []
    for inv in trace:
        details = inv.retrieval_details
        params = json.dumps(inv.input_params, ensure_ascii=False, sort_keys=True, default=str)
        entries.append(
            ToolTraceEntry(
                source_invocation_id=inv.source_invocation_id,
                tool_name=inv.tool_name,
                success=inv.success,
                evidence_status=details.evidence_status if details else "unknown",
                raw_paths=tuple(r.raw_path for r in details.evidence_refs) if details else (),
                input_summary=params[:INPUT_SUMMARY_CHARS],
            )
        )
    return tuple(entries)


def _text(value: Any) -> str | None:
    """Binding fields come from a model: keep strings, show anything else as JSON."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _note(raw: Mapping[str, Any]) -> GateNote:
    return GateNote(
        rule=str(raw.get("rule", "")),
        severity=_text(raw.get("severity")),
        claim_id=_text(raw.get("claim_id")),
        binding_index=_int(raw.get("binding_index")),
        message=str(raw.get("message", "")),
        hint=raw.get("hint"),
        source_invocation_id=_int(raw.get("source_invocation_id")),
        raw_path=_text(raw.get("raw_path")),
    )


def outcome_record(result: Mapping[str, Any]) -> GatekeeperOutcome:
    """The seed-shaped ``gatekeeper_result`` dict as its Avro record."""
    return GatekeeperOutcome(
        status=result["status"],
        severity=result["severity"],
        rule_set_version=result["rule_set_version"],
        rules=tuple(RuleMeta(**r) for r in result["rules"]),
        checked_bindings=tuple(
            CheckedBinding(
                claim_id=_text(b.get("claim_id")) or "",
                binding_index=_int(b.get("binding_index")) or 0,
                tool_name=_text(b.get("tool_name")),
                source_invocation_id=_int(b.get("source_invocation_id")),
                raw_path=_text(b.get("raw_path")),
                matched_text=_text(b.get("matched_text")),
                status=str(b.get("status")),
                rule=_text(b.get("rule")),
                reason=_text(b.get("reason")),
            )
            for b in result["checked_bindings"]
        ),
        failed_rules=tuple(result["failed_rules"]),
        warnings=tuple(_note(w) for w in result["warnings"]),
        errors=tuple(_note(e) for e in result["errors"]),
    )


class GatekeeperHandler:
    """Checks one round of evidence against a fixed rule set."""

    def __init__(self, ruleset: Ruleset) -> None:
        self.ruleset = ruleset

    def __call__(self, event: Event) -> list[Event]:
        assert isinstance(event, EvidenceProduced)
        outcome = check(
            event.executor_structured_output,
            [invocation_view(inv) for inv in event.tool_trace],
            self.ruleset,
        )
        return [
            event.reply(
                GatekeeperResult,
                SERVICE,
                gatekeeper_result=outcome_record(outcome.result),
                executor_structured_output=outcome.structured_output,
                executor_final_answer=event.executor_final_answer,
                executor_output_parse_status=event.executor_output_parse_status,
                tool_trace_summary=trace_summary(event.tool_trace),
                original_query=event.request.query,
                round=event.round,
                request=event.request,
                plan=event.plan,
                prompt_audit=event.prompt_audit,
            )
        ]
