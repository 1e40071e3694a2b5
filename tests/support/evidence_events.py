"""Turn gatekeeper input dicts (scenarios, mutated cases) into ``EvidenceProduced`` events."""

from __future__ import annotations

import uuid
from typing import Any

from tracebound.events import (
    DiagnosisRequest,
    EvidenceProduced,
    EvidenceRef,
    ParseStatus,
    PlannerPlan,
    PlanSnapshot,
    Producer,
    PromptAudit,
    RetrievalDetails,
    ToolInvocation,
)


def tool_invocation(raw: dict[str, Any]) -> ToolInvocation:
    details = raw.get("retrieval_details")
    return ToolInvocation(
        source_invocation_id=raw["id"],
        tool_name=raw["tool_name"],
        input_params=raw.get("arguments", {}),
        output={"success": raw.get("success", True)},
        duration_ms=12,
        success=raw.get("success", True),
        retrieval_details=None
        if details is None or "evidence_refs" not in details
        else RetrievalDetails(
            evidence_status=details.get("evidence_status", "supported"),
            evidence_refs=tuple(EvidenceRef(**ref) for ref in details["evidence_refs"]),
        ),
    )


def evidence_event(
    structured_output: dict[str, Any] | None,
    invocations: list[dict[str, Any]],
    query: str = "payment-service 当前是否有 HighCPUUsage 告警？",
    run_id: str | None = None,
) -> EvidenceProduced:
    return EvidenceProduced(
        run_id=run_id or str(uuid.uuid4()),
        producer=Producer(service="executor"),
        executor_final_answer="{}",
        executor_structured_output=structured_output,
        executor_output_parse_status=ParseStatus(status="valid", detail="test"),
        tool_trace=tuple(tool_invocation(i) for i in invocations),
        round=1,
        request=DiagnosisRequest(mode="CHAT", query=query, language="zh"),
        plan=PlanSnapshot(
            planner_plan=PlannerPlan(
                selected_skill="diagnose-high-cpu",
                selection_reason="test",
                plan=("query_metrics",),
                reasoning="test",
            ),
            narrow_scope=True,
        ),
        prompt_audit=PromptAudit(version="test"),
    )
