"""The parts every executor claim is made of: a claim, the binding it cites, its item.

Why one place: the rules executor's claims (:mod:`claims`) and its log-shape
claims (:mod:`log_shapes`) must cite evidence the same way, so the gatekeeper
checks them the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracebound.events import ToolInvocation


def item_at(inv: ToolInvocation, array: str, raw_path: str) -> Mapping[str, Any] | None:
    """The item ``$.<array>[i]`` of the invocation's output, if it is there."""
    output = inv.output if isinstance(inv.output, Mapping) else {}
    items = output.get(array)
    if not isinstance(items, list) or not raw_path.startswith(f"$.{array}["):
        return None
    index = int(raw_path[len(array) + 3 : -1])
    return items[index] if 0 <= index < len(items) and isinstance(items[index], Mapping) else None


def binding(inv: ToolInvocation, raw_path: str, text: str) -> dict[str, Any]:
    return {
        "source_type": "tool_trace",
        "source_id": "",
        "tool_name": inv.tool_name,
        "source_invocation_id": inv.source_invocation_id,
        "raw_path": raw_path,
        "evidence_excerpt": text,
    }


def claim(claim_type: str, text: str, bindings: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "claim_id": "",
        "claim_type": claim_type,
        "claim_text": text,
        "support_level": "direct",
        "evidence_bindings": bindings,
    }
