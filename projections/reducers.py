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
from tracebound import topology
from tracebound.events import EVENT_TYPES, AgentStep, DeadLetter, Event, ToolInvoked

# The events of a run, as the topology names them for the ``diagnosis_run`` model.
RUN_EVENTS: tuple[type[Event], ...] = tuple(EVENT_TYPES[name] for name in topology.RUN_EVENTS)


def invocation_row(event: ToolInvoked) -> dict[str, Any]:
    """One ``tool_invocation`` row; ``created_at`` is when the tool ran (the event time)."""
    inv = event.tool_invocation
    details = inv.retrieval_details
    return {
        "id": inv.source_invocation_id,
        "run_id": event.run_id,
        "round": inv.round,
        "tool_name": inv.tool_name,
        "input_params": inv.input_params,
        "output": inv.output,
        "output_preview": inv.output_preview,
        "retrieval_layer": inv.retrieval_layer,
        "backend": inv.backend.model_dump(mode="json") if inv.backend else None,
        "l0_match_count": inv.l0_match_count,
        "l1_match_count": inv.l1_match_count,
        "retrieval_details": details.model_dump(mode="json") if details else None,
        "relevance_level": details.relevance_level if details else None,
        "dedup_reason": details.dedup_reason if details else None,
        "duration_ms": inv.duration_ms,
        "success": inv.success,
        "error_message": inv.error_message,
        "created_at": event.occurred_at,
        "event_id": event.event_id,
    }


def step_row(event: AgentStep) -> dict[str, Any]:
    """One ``agent_step`` row; ``created_at`` is when the model call ended (the event time)."""
    return {
        "event_id": event.event_id,
        "run_id": event.run_id,
        "session_id": event.session_id,
        "agent_name": event.agent_name,
        "step_index": event.step_index,
        "model_input": event.model_input,
        "model_output": event.model_output,
        "thought": event.thought,
        "has_tool_call": event.has_tool_call,
        "duration_ms": event.duration_ms,
        "token_count": event.token_count,
        "prompt_tokens": event.prompt_tokens,
        "completion_tokens": event.completion_tokens,
        "model": event.model,
        "prompt_version": event.prompt_version,
        "success": event.success,
        "error_message": event.error_message,
        "finish_reason": event.finish_reason,
        "created_at": event.occurred_at,
    }


MAX_DEAD_LETTER_MESSAGE = 1000  # of the error text; the event on the topic keeps all of it
UNKNOWN_RUN = "unknown"  # the run id of a dead letter whose input had no readable key


def dead_letter_row(event: DeadLetter) -> dict[str, Any]:
    """One ``dead_letter`` row: where the refused input was, who refused it, and why."""
    return {
        "event_id": event.event_id,
        "run_id": None if event.run_id == UNKNOWN_RUN else event.run_id,
        "occurred_at": event.occurred_at,
        "service": event.service,
        "source_topic": event.source_topic,
        "source_partition": event.source_partition,
        "source_offset": event.source_offset,
        "error_type": event.error_type,
        "error_message": event.error_message[:MAX_DEAD_LETTER_MESSAGE],
    }


@dataclass(frozen=True, slots=True)
class KeyedRows:
    """The reducer of a model whose rows are facts of one event each: ``event`` → ``row``."""

    event: type[Event]
    row: Callable[[Any], dict[str, Any]]
    key: str

    def __call__(self, events: Iterable[Event]) -> dict[Any, dict[str, Any]]:
        """Rows by key; of two events with one key the larger id wins.

        Keeping the larger event id (rather than the later arrival) makes the result the
        same whatever order partitions were read in, which a rebuild relies on.
        """
        rows: dict[Any, dict[str, Any]] = {}
        for event in events:
            if not isinstance(event, self.event):
                continue
            new = self.row(event)
            held = rows.get(new[self.key])
            if held is None or new["event_id"] > held["event_id"]:
                rows[new[self.key]] = new
        return rows


INVOCATION_ROWS = KeyedRows(ToolInvoked, invocation_row, "id")
STEP_ROWS = KeyedRows(AgentStep, step_row, "event_id")
DEAD_LETTER_ROWS = KeyedRows(DeadLetter, dead_letter_row, "event_id")


@dataclass
class RunChanges:
    """The merge states of the runs a batch touched, and which of them changed."""

    states: dict[str, runs.State] = field(default_factory=dict)
    changed: set[str] = field(default_factory=set)

    def rows(self) -> list[dict[str, Any]]:
        return [runs.row(run_id, self.states[run_id]) for run_id in sorted(self.changed)]


def reduce_runs(held: Mapping[str, runs.State], events: Iterable[Event]) -> RunChanges:
    """Fold a batch into the held states, in place; a run that did not change is not rewritten.

    The held states are taken over (merged into, not copied): pass states the caller
    owns, as read from the database or kept by a :class:`~projections.store.RunStates`.
    """
    changes = RunChanges(states=dict(held))
    for event in events:
        if not isinstance(event, RUN_EVENTS):
            continue
        state = changes.states.setdefault(event.run_id, {})
        if runs.merge(state, event):
            changes.changed.add(event.run_id)
    return changes
