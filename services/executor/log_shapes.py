"""Log lines counted by message shape, as claims: how much of each kind was logged.

Why: a quoted line says what was logged, its count says how much. "claimsdesk
logged 412 ERROR lines like "… Connection is not available, request timed out
after <N>ms …" from 06:50:35 to 07:03:13" is what an SRE reads from a log
store's pattern view in the first minutes. ``query_logs`` with ``shapes=true``
returns each shape as an item ``$.shapes[i]`` (each number written ``<N>``);
its claim is worded from that item, so its count and times are its ref's.

Which shapes an answer states: errors, then warnings, the most frequent first,
each seen at least :data:`MIN_COUNT` times (a few lines read better quoted);
another level only when it floods (:data:`FLOOD` lines or more); at most
:data:`STATED`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from services.executor.claim_parts import binding, claim, item_at
from services.executor.log_lines import LEVEL_ORDER
from services.executor.tools.logs import shape_subject
from tracebound.events import ExecutionPlan, ToolInvocation

ARRAY = "shapes"
STATED = 2
MIN_COUNT = 5
FLOOD = 100


def _items(inv: ToolInvocation) -> list[tuple[str, str, Mapping[str, Any]]]:
    """``(raw_path, ref text, item)`` of each shape the invocation's refs cite."""
    details = inv.retrieval_details
    if inv.tool_name != "query_logs" or details is None:
        return []
    found = ((r, item_at(inv, ARRAY, r.raw_path)) for r in details.evidence_refs)
    return [(ref.raw_path, ref.text, item) for ref, item in found if item is not None]


def stated(
    trace: Sequence[ToolInvocation], lang: str, focus: ExecutionPlan, t: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """The shape claims an answer states, in order (see the module's docstring)."""
    ranked: list[tuple[int, int, dict[str, Any]]] = []
    for inv in trace:
        for raw_path, text, item in _items(inv) if inv.success else ():
            count = int(item.get("count") or 0)
            service = str(item.get("service") or "")
            level = LEVEL_ORDER.get(str(item.get("level")), 3)
            least = MIN_COUNT if level < 3 else FLOOD
            if count < least or (focus.services and service not in focus.services):
                continue
            shown = {k: item.get(k) or "-" for k in ("level", "message", "first", "last")}
            shown["service"] = shape_subject(service)  # as its ref says it
            wording = str(t["log_shape"][lang]).format(count=count, **shown)
            said = claim("observation", wording, [binding(inv, raw_path, text)])
            ranked.append((level, -count, said))
    ranked.sort(key=lambda r: (r[0], r[1]))
    unique: dict[str, dict[str, Any]] = {}  # the same claim from two searches is said once
    for _, _, said in ranked:
        unique.setdefault(said["claim_text"], said)
    return list(unique.values())[:STATED]
