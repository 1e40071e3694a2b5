"""Pure reducers: decoded events → row changes of each read model.

Nothing here touches a database; the read models (:mod:`projections.models`)
write what these functions return. ``tool_invocation``, ``agent_step`` and ``dead_letter``
rows are facts of a single event each, so their reducers are plain mappings; ``diagnosis_run``
merges many events per run (:mod:`projections.runs`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from projections import runs
from projections.run_state import RunState
from tracebound import topology
from tracebound.codec.documents import EventDoc
from tracebound.events import Event

# The events of a run, as the topology names them for the ``diagnosis_run`` model.
RUN_EVENTS: frozenset[str] = frozenset(topology.RUN_EVENTS)
Item = Event | EventDoc  # what the reducers take: documents, or models turned into them
_STEP_COLUMNS = (
    "event_id",
    "run_id",
    "session_id",
    "agent_name",
    "step_index",
    "model_input",
    "model_output",
    "thought",
    "has_tool_call",
    "duration_ms",
    "token_count",
    "prompt_tokens",
    "completion_tokens",
    "model",
    "prompt_version",
    "success",
    "error_message",
    "finish_reason",
)


def invocation_row(event: EventDoc) -> dict[str, Any]:
    """One ``tool_invocation`` row; ``created_at`` is when the tool ran (the event time)."""
    data = event.data
    inv = data["tool_invocation"]
    details = inv["retrieval_details"]
    return {
        "id": inv["source_invocation_id"],
        "run_id": data["run_id"],
        "round": inv["round"],
        "tool_name": inv["tool_name"],
        "input_params": inv["input_params"],
        "output": inv["output"],
        "output_preview": inv["output_preview"],
        "retrieval_layer": inv["retrieval_layer"],
        "backend": inv["backend"],
        "l0_match_count": inv["l0_match_count"],
        "l1_match_count": inv["l1_match_count"],
        "retrieval_details": details,
        "relevance_level": details["relevance_level"] if details else None,
        "dedup_reason": details["dedup_reason"] if details else None,
        "duration_ms": inv["duration_ms"],
        "success": inv["success"],
        "error_message": inv["error_message"],
        "created_at": runs.moment(data["occurred_at"]),
        "event_id": data["event_id"],
    }


def step_row(event: EventDoc) -> dict[str, Any]:
    """One ``agent_step`` row; ``created_at`` is when the model call ended (the event time)."""
    data = event.data
    return {
        **{column: data[column] for column in _STEP_COLUMNS},
        "created_at": runs.moment(data["occurred_at"]),
    }


MAX_DEAD_LETTER_MESSAGE = 1000  # of the error text; the event on the topic keeps all of it
UNKNOWN_RUN = "unknown"  # the run id of a dead letter whose input had no readable key


def dead_letter_row(event: EventDoc) -> dict[str, Any]:
    """One ``dead_letter`` row: where the refused input was, who refused it, and why."""
    data = event.data
    return {
        "event_id": data["event_id"],
        "run_id": None if data["run_id"] == UNKNOWN_RUN else data["run_id"],
        "occurred_at": runs.moment(data["occurred_at"]),
        "service": data["service"],
        "source_topic": data["source_topic"],
        "source_partition": data["source_partition"],
        "source_offset": data["source_offset"],
        "error_type": data["error_type"],
        "error_message": data["error_message"][:MAX_DEAD_LETTER_MESSAGE],
    }


@dataclass(frozen=True, slots=True)
class KeyedRows:
    """The reducer of a model whose rows are facts of one event each: ``event`` → ``row``."""

    event: str
    row: Callable[[EventDoc], dict[str, Any]]
    key: str

    def __call__(self, events: Iterable[Item]) -> dict[Any, dict[str, Any]]:
        """Rows by key; of two events with one key the larger id wins.

        Keeping the larger event id (rather than the later arrival) makes the result the
        same whatever order partitions were read in, which a rebuild relies on.
        """
        rows: dict[Any, dict[str, Any]] = {}
        for item in events:
            event = runs.as_doc(item)
            if event.name != self.event:
                continue
            new = self.row(event)
            held = rows.get(new[self.key])
            if held is None or new["event_id"] > held["event_id"]:
                rows[new[self.key]] = new
        return rows


INVOCATION_ROWS = KeyedRows("ToolInvoked", invocation_row, "id")
STEP_ROWS = KeyedRows("AgentStep", step_row, "event_id")
DEAD_LETTER_ROWS = KeyedRows("DeadLetter", dead_letter_row, "event_id")


@dataclass
class RunChanges:
    """The merge states of the runs a batch touched, and which of them changed."""

    states: dict[str, RunState] = field(default_factory=dict)
    changed: set[str] = field(default_factory=set)
    # The row versions of the states read from the table (:mod:`projections.run_writes`).
    read: dict[str, str] = field(default_factory=dict)


def reduce_runs(held: Mapping[str, RunState], events: Iterable[Item]) -> RunChanges:
    """Fold a batch into the held states, in place; a run that did not change is not rewritten.

    The held states are taken over (merged into, not copied): pass states the caller
    owns, as read from the database or kept by a :class:`~projections.store.RunStates`.
    """
    changes = RunChanges(states=dict(held))
    for item in events:
        event = runs.as_doc(item)
        if event.name not in RUN_EVENTS:
            continue
        run_id = event.data["run_id"]
        if runs.merge(changes.states.setdefault(run_id, {}), event):
            changes.changed.add(run_id)
    return changes
