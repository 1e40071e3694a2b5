"""The executor's answer to the demo CPU-alert question, as a model that used its tool writes it.

The llm tests of the executor (its protocol cases, the repair turn through the
pipeline) script this reply: one observation citing the ``HighCPUUsage`` ref the
demo ``query_metrics`` returns, so the gatekeeper passes it when the citation
is right, and a test can spoil just the citation.
"""

from __future__ import annotations

import json
from typing import Any

from services.executor.ids import invocation_id
from services.executor.tools import ToolSettings, build_tools
from services.executor.tools.base import RunContext
from tests.support.demo_evidence import claim, output

CPU_QUESTION = "payment-service 当前是否有 HighCPUUsage 告警？"
CPU_PARAMS = {"alert_name": "HighCPUUsage", "service": "payment-service"}
CPU_CLAIM = "payment-service 当前存在 HighCPUUsage 告警，CPU 使用率为 92%。"


def cpu_ref(run_id: str) -> tuple[str, str]:
    """The ``raw_path`` of the CPU alert's ref and the excerpt a model copies from its text."""
    tool = build_tools(ToolSettings.demo())["query_metrics"]
    outcome = tool.run(tool.params_model.model_validate(CPU_PARAMS), RunContext(run_id=run_id))
    ref = outcome.retrieval_details.evidence_refs[0]
    return ref.raw_path, ref.text.split(", threshold")[0]


def cpu_answer(run_id: str, call: int = 1, cited: Any = None) -> dict[str, Any]:
    """executor_evidence_v2 citing the ``call``-th tool call of round 1 (or ``cited`` as given)."""
    raw_path, excerpt = cpu_ref(run_id)
    binding = {
        "tool_name": "query_metrics",
        "source_invocation_id": invocation_id(run_id, 1, call - 1) if cited is None else cited,
        "raw_path": raw_path,
        "evidence_excerpt": excerpt,
    }
    return output(claim("claim-1", "observation", CPU_CLAIM, binding))


def cpu_answer_text(run_id: str, call: int = 1, cited: Any = None) -> str:
    """:func:`cpu_answer` as the reply's JSON text."""
    return json.dumps(cpu_answer(run_id, call, cited), ensure_ascii=False)
