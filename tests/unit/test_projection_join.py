"""Two writers folding parts of one run: joining their states gives the whole run.

A partition-count change leaves a run's earlier events on one partition and its
later ones on another, which another worker or rebuild group may own
(:mod:`projections.run_writes`).
"""

from __future__ import annotations

import copy
import random
from datetime import UTC, datetime

import orjson
import pytest

from projections import runs, stored_state
from projections.reducers import reduce_runs
from projections.run_state import RunState
from projections.run_writes import join
from tests.support.run_events import mixed_runs
from tests.unit.test_projection_resolutions import FIRST, SECOND, resolved
from tests.unit.test_projection_runs import RUN, two_round_run
from tracebound.codec.documents import EventDoc, document
from tracebound.events import Event


def _stored(run_id: str, state: RunState) -> RunState:
    """``state`` as a writer reads it back from its row (compacted, JSON, restored)."""
    row = runs.row(run_id, state)
    as_json = orjson.loads(orjson.dumps(row, default=str))
    return stored_state.restore(as_json["merge_state"], as_json)


def _split(events: list[EventDoc], seed: int) -> tuple[list[EventDoc], list[EventDoc]]:
    rng = random.Random(seed)
    left: list[EventDoc] = []
    right: list[EventDoc] = []
    for event in events:
        (left if rng.random() < 0.5 else right).append(event)
    return left, right


def _runs_with_resolutions() -> list[EventDoc]:
    _specs, events = mixed_runs(40, datetime(2026, 3, 1, tzinfo=UTC))
    extra: list[Event] = [*two_round_run("AIOPS"), resolved(FIRST), resolved(SECOND, FIRST)]
    return [document(e) for e in [*events, *extra]]


@pytest.mark.slow
def test_joined_parts_equal_the_whole_run_whatever_the_split() -> None:
    events = _runs_with_resolutions()
    whole = reduce_runs({}, events).states
    assert RUN in whole and whole[RUN].get("resolved")
    for seed in range(12):
        left, right = _split(events, seed)
        mine = reduce_runs({}, left).states
        theirs = reduce_runs({}, right).states
        for run_id, state in whole.items():
            joined = copy.deepcopy(mine.get(run_id, {}))
            if run_id in theirs:
                join(joined, _stored(run_id, theirs[run_id]))
            assert runs.row(run_id, joined) == runs.row(run_id, state), (seed, run_id)


@pytest.mark.slow
def test_a_join_reports_a_change_only_when_the_state_changes() -> None:
    events = _runs_with_resolutions()
    whole = reduce_runs({}, events).states
    left, _right = _split(events, 3)
    part = reduce_runs({}, left).states
    for run_id, state in whole.items():
        same = copy.deepcopy(state)
        assert not join(same, _stored(run_id, state)), "joining a state into itself"
        if run_id in part and runs.row(run_id, part[run_id]) != runs.row(run_id, state):
            assert join(copy.deepcopy(part[run_id]), state)
            assert not join(copy.deepcopy(state), part[run_id]), "a part adds nothing"
