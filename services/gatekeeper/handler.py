"""The gatekeeper role: ``EvidenceProduced`` in, ``GatekeeperResult`` out.

Pure: it needs nothing but the event (the executor's structured output and the
tool trace recorded by code travel inside it) and the rule set, so it can be
replayed over recorded evidence with a different rules file.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from services.gatekeeper.check import check
from services.gatekeeper.ruleset import Ruleset
from tracebound.events import (
    Event,
    EvidenceProduced,
    GatekeeperResult,
    ToolInvocation,
    ToolTraceEntry,
)

SERVICE = "gatekeeper"
INPUT_SUMMARY_CHARS = 200


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
                backend=inv.backend,
            )
        )
    return tuple(entries)


class GatekeeperHandler:
    """Checks one round of evidence against a fixed rule set."""

    def __init__(self, ruleset: Ruleset) -> None:
        self.ruleset = ruleset

    def __call__(self, event: EvidenceProduced) -> list[Event]:
        outcome = check(event.executor_structured_output, event.tool_trace, self.ruleset)
        return [
            event.reply(
                GatekeeperResult,
                SERVICE,
                gatekeeper_result=outcome.result,
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
