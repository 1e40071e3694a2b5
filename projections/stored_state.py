"""A run's merge state as stored: what the row's columns already hold is left out.

The merge state (:mod:`projections.runs`) keeps the winning value of each slot,
and the row's columns are built from those values: the verdict's claim checks,
the gatekeeper's result and the composer's answer end up in ``self_evaluation``,
``final_answer``, ``plan`` and ``request`` as they are. Storing both doubled a
row (about 24 KB of JSON, 14 KB of it the state). So before a row is written,
every slot entry that the row holds *as the very same object* (so it came from
that slot, not from another one with equal content) is dropped from the stored
state and its key listed under ``from_row``; reading a state back restores each
listed key from the row at the same place. A state stored before this (no
``from_row``) reads as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from projections.run_state import RunState

FROM_ROW = "from_row"
_EVALUATION = ("self_evaluation", "verifier_evaluation")
_AUDITED = ("answer", "verdict", "gatekeeper", "evidence")
# The verdict's fields that ``verifier_evaluation`` takes as they are.
VERDICT_FIELDS = (
    "verdict",
    "groundedness_score",
    "critical_fact_count",
    "claim_checks",
    "facts_checked",
    "rationale",
    "verifier_mode",
)

# Where the row keeps an entry of a slot's value: (slot, key) → path in the row.
PLACES: dict[tuple[str, str], tuple[str, ...]] = {
    ("plan", "planner_plan"): ("plan",),
    **{("verdict", key): (*_EVALUATION, key) for key in VERDICT_FIELDS},
    ("verdict", "aiops_rule_evaluation"): ("self_evaluation", "aiops_rule_evaluation"),
    **{
        ("gatekeeper", key): (*_EVALUATION, key)
        for key in (
            "gatekeeper_result",
            "tool_trace_summary",
            "executor_structured_output",
            "executor_output_parse_status",
        )
    },
    **{
        ("evidence", key): (*_EVALUATION, key)
        for key in ("executor_structured_output", "executor_output_parse_status")
    },
    **{
        ("answer", key): ("final_answer", key)
        for key in ("answer_summary", "recommended_actions", "user_facing_answer", "guard")
    },
    **{(slot, "prompt_audit"): (*_EVALUATION, "prompt_audit") for slot in _AUDITED},
}
# The columns a stored state may need to be read back.
COLUMNS: tuple[str, ...] = tuple(sorted({path[0] for path in PLACES.values()}))
_MISSING = object()


def _at(row: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = row
    for step in path:
        if not isinstance(value, Mapping) or step not in value:
            return _MISSING
        value = value[step]
    return value


def compact(state: RunState, row: Mapping[str, Any]) -> RunState:
    """``state`` without the slot entries ``row`` holds (``state`` itself is not changed)."""
    out = dict(state)
    for (slot, key), path in PLACES.items():
        held: Any = out.get(slot)
        if not isinstance(held, dict):
            continue
        value = held.get("value")
        if not isinstance(value, dict) or key not in value or _at(row, path) is not value[key]:
            continue
        if held is state[slot]:  # copy a slot once before leaving anything out
            kept = list(held.get(FROM_ROW, []))
            held = out[slot] = {**held, "value": dict(value), FROM_ROW: kept}
        del held["value"][key]
        held[FROM_ROW].append(key)
    return out


def restore(state: RunState, row: Mapping[str, Any]) -> RunState:
    """The whole merge state from a stored one and its row (in place; returns it)."""
    for slot, held in state.items():
        if not isinstance(held, dict) or FROM_ROW not in held:
            continue
        value = held["value"]
        for key in held.pop(FROM_ROW):
            found = _at(row, PLACES[(slot, key)])
            value[key] = None if found is _MISSING else found
    return state


def slot_value(state: Mapping[str, Any], slot: str, row: Mapping[str, Any]) -> dict[str, Any]:
    """The whole value of one slot of a stored state (neither is changed); {} if none."""
    held = state.get(slot)
    if not isinstance(held, Mapping) or not isinstance(held.get("value"), Mapping):
        return {}
    whole = {slot: {**held, "value": dict(held["value"])}}
    if isinstance(held.get(FROM_ROW), list):
        whole[slot][FROM_ROW] = list(held[FROM_ROW])
    return dict(restore(whole, row)[slot]["value"])


__all__ = ["COLUMNS", "FROM_ROW", "PLACES", "VERDICT_FIELDS", "compact", "restore", "slot_value"]
