"""What a projection worker folds between commits: each row once per window, none lost."""

from __future__ import annotations

import copy
import random
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from projections.live import Held, PendingFacts, PendingRuns
from projections.models import MODELS, RunModel
from projections.reducers import INVOCATION_ROWS, RunChanges, reduce_runs
from projections.run_state import RunState
from projections.runs import row as run_row
from projections.store import Connection
from tests.support.run_events import mixed_runs
from tests.support.samples import sample
from tracebound.codec.documents import EventDoc, document
from tracebound.events import ToolInvoked

NO_DB: Any = None  # nothing here may reach the database


class Table:
    """A ``diagnosis_run`` table in memory: the rows written and the states they hold."""

    def __init__(self) -> None:
        self.rows: dict[str, dict[str, Any]] = {}
        self.states: dict[str, RunState] = {}
        self.writes = 0
        self.reads: list[str] = []

    def fold(
        self, conn: Connection, table: str, held: Held | None, events: Sequence[EventDoc]
    ) -> RunChanges:
        run_ids = sorted({e.data["run_id"] for e in events})
        states = held(run_ids) if held is not None else {}
        missing = [r for r in run_ids if r not in states]
        self.reads += missing
        states.update({r: copy.deepcopy(self.states[r]) for r in missing if r in self.states})
        return reduce_runs(states, events)

    def write_states(
        self,
        conn: Connection,
        table: str,
        states: Mapping[str, RunState],
        versions: Mapping[str, str | None],
    ) -> dict[str, str]:
        self.writes += len(states)
        for run_id, state in states.items():
            self.rows[run_id] = run_row(run_id, state)
        return {run_id: "1" for run_id in states}


def _events() -> list[EventDoc]:
    _runs, events = mixed_runs(30, datetime(2026, 3, 1, tzinfo=UTC))
    random.Random(5).shuffle(events)
    return [document(e) for e in events]


def test_runs_folded_over_many_batches_are_written_once_per_commit() -> None:
    events = _events()
    table = Table()
    pending = PendingRuns(table, max_runs=100)
    for start in range(0, len(events), 7):
        pending.fold(NO_DB, "diagnosis_run", events[start : start + 7])
    runs = {e.data["run_id"] for e in events}
    assert pending.pending() == len(runs)
    assert table.writes == 0  # nothing before the commit
    assert pending.write(NO_DB, "diagnosis_run") == len(runs)
    pending.committed()
    assert pending.pending() == 0
    assert len(table.reads) == len(set(table.reads))  # a run is looked up once at most
    whole = reduce_runs({}, events).states
    assert table.rows == {r: run_row(r, whole[r]) for r in runs}


def test_a_cleared_window_is_folded_again_from_the_stored_rows() -> None:
    events = _events()
    half = len(events) // 2
    table = Table()
    pending = PendingRuns(table, max_runs=2)
    pending.fold(NO_DB, "diagnosis_run", events[:half])
    pending.write(NO_DB, "diagnosis_run")
    pending.committed()
    for run_id, row in table.rows.items():  # what a read back would restore
        table.states[run_id] = reduce_runs(
            {}, [e for e in events[:half] if e.data["run_id"] == run_id]
        ).states[run_id]
        assert row["run_id"] == run_id
    pending.fold(NO_DB, "diagnosis_run", events[half:])
    pending.clear()  # a refused commit or a rebalance: nothing of it is written
    pending.fold(NO_DB, "diagnosis_run", events[half:])
    pending.write(NO_DB, "diagnosis_run")
    pending.committed()
    whole = reduce_runs({}, events).states
    assert table.rows == {r: run_row(r, whole[r]) for r in whole}
    assert table.reads  # states past the bound were read back, not guessed


def test_facts_keep_the_larger_event_id_across_batches() -> None:
    base = sample(ToolInvoked)
    older = base.model_copy(update={"event_id": "evt-1"})
    newer = base.model_copy(update={"event_id": "evt-2"})
    written: list[dict[str, Any]] = []

    class Facts:
        def write_rows(self, conn: Connection, table: str, rows: list[dict[str, Any]]) -> None:
            written.extend(rows)

    pending = PendingFacts(Facts(), INVOCATION_ROWS)
    pending.fold(NO_DB, "tool_invocation", [document(newer)])
    pending.fold(NO_DB, "tool_invocation", [document(older)])
    assert pending.pending() == 1
    assert pending.write(NO_DB, "tool_invocation") == 1
    assert written[0]["event_id"] == "evt-2"
    pending.committed()
    assert pending.pending() == 0


def test_the_run_model_folds_through_the_same_protocol() -> None:
    model = MODELS["diagnosis_run"]
    assert isinstance(model, RunModel)
    assert isinstance(model.live_writer(), PendingRuns)
