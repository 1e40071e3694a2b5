"""The merge state as stored: what the row holds is left out and restored on read."""

from __future__ import annotations

import copy
import json
from typing import Any

from projections import runs, stored_state
from projections.run_state import RunState
from tests.unit.test_projection_runs import fold, two_round_run
from tracebound import fastjson


def _stored(run_id: str, state: RunState) -> dict[str, Any]:
    """The row as PostgreSQL gives it back: every JSON column through JSON text."""
    row = runs.row(run_id, state)
    return {k: fastjson.loads(fastjson.dumps(v)) for k, v in row.items()}


def test_every_prefix_of_a_run_reads_back_whole() -> None:
    events = two_round_run("AIOPS")
    for end in range(1, len(events) + 1):
        state = fold(events[:end])
        row = _stored("r-1", state)
        back = stored_state.restore(copy.deepcopy(row["merge_state"]), row)
        assert back == json.loads(json.dumps(state)), end
        assert runs.row("r-1", back) == runs.row("r-1", state)


def test_the_stored_state_leaves_out_what_the_columns_hold() -> None:
    state = fold(two_round_run())
    row = runs.row("r-1", state)
    stored = row["merge_state"]
    assert len(fastjson.dumps(stored)) < len(fastjson.dumps(state)) / 2
    gate = stored["gatekeeper"]
    assert "gatekeeper_result" not in gate["value"]
    assert "gatekeeper_result" in gate[stored_state.FROM_ROW]
    assert state["gatekeeper"]["value"]["gatekeeper_result"] is not None  # not changed


def test_the_executor_s_own_output_stays_with_its_evidence() -> None:
    state = fold(two_round_run())
    row = _stored("r-1", state)
    evidence = stored_state.slot_value(row["merge_state"], "evidence", row)
    assert evidence == json.loads(json.dumps(state["evidence"]["value"]))


def test_a_state_stored_before_reads_as_it_is() -> None:
    state = json.loads(json.dumps(fold(two_round_run())))
    assert stored_state.restore(copy.deepcopy(state), {}) == state
