"""Turn gatekeeper input dicts (scenarios, mutated cases) into ``EvidenceProduced`` events."""

from __future__ import annotations

import uuid
from typing import Any

from services.gatekeeper import parse_invocation
from tracebound.events import (
    DiagnosisRequest,
    EvidenceProduced,
    ParseStatus,
    PlannerPlan,
    PlanSnapshot,
    Producer,
    PromptAudit,
    ToolInvocation,
)


def tool_invocation(raw: dict[str, Any]) -> ToolInvocation:
    """An invocation in the CLI's shape as the executor records it (parsed as the CLI does)."""
    record = parse_invocation(raw)
    params, output = raw.get("arguments", {}), {"success": record.success}
    return record.model_copy(update={"input_params": params, "output": output, "duration_ms": 12})


def answered_invocation(
    inv_id: int, tool: str, params: dict[str, Any], output: dict[str, Any], paths: list[str]
) -> ToolInvocation:
    """A successful call of ``tool`` whose refs are ``paths`` of ``output`` (none: no evidence)."""
    raw = {
        "id": inv_id,
        "tool_name": tool,
        "success": True,
        "arguments": params,
        "retrieval_details": {
            "evidence_status": "supported" if paths else "no_evidence",
            "evidence_refs": [{"raw_path": p, "text": p} for p in paths or ["$.no_evidence"]],
        },
    }
    return tool_invocation(raw).model_copy(update={"output": output})


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
