"""``diagnosis_run`` rows written when another writer may have written the same run.

Runs are co-partitioned on every topic, so the events of a run normally reach one
worker, one replica or one rebuild group. A partition-count change breaks that for
the runs in flight at the time: their earlier events stay on the old partition
and their later ones land on the partition the new count gives, which another
worker may own. Two writers then fold parts of one run, and a plain upsert would
keep whichever wrote last.

So every row is written against the version its state started from: the row's
``xmin`` as read, the version this writer wrote last, or none for a run it saw no
row of. A row that changed meanwhile is not overwritten (the conflicting upsert
only locks it); it is read back under that lock, joined with the state in hand
(:func:`join`, the merge state being a join-semilattice) and written again. The
common case costs nothing more than the comparison inside the upsert.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from projections import resolutions
from projections.reducers import RunChanges
from projections.run_state import RunState
from projections.runs import row as run_row
from projections.store import Connection, held_runs, upsert

# The row version (PostgreSQL's xmin as text) a state started from; None: no row seen.
Version = str | None
KEY = "run_id"


def join(into: RunState, other: RunState) -> bool:
    """Join ``other`` into ``into`` (in place) as if its events had been merged there.

    Returns whether ``into`` changed. Each part follows :func:`projections.runs.merge`:
    ranked slots keep the higher rank, stage timings the earliest first and latest
    last, agent steps and resolved alerts are unions by key.
    """
    changed = False
    for key, theirs in other.items():
        mine = into.get(key)
        if key == "max_round":
            if mine is None or int(theirs) > int(mine):
                into[key] = int(theirs)
                changed = True
        elif key == "timings":
            changed |= _join_timings(into.setdefault(key, {}), theirs)
        elif key == "steps":
            changed |= _join_steps(into.setdefault(key, {}), theirs)
        elif key == resolutions.SLOT:
            changed |= resolutions.join(into, theirs)
        elif mine is None or list(theirs["rank"]) > list(mine["rank"]):
            into[key] = theirs
            changed = True
    return changed


def _join_timings(spans: dict[str, Any], theirs: Mapping[str, Any]) -> bool:
    """Stage timings: the earliest first and the latest last of each stage."""
    changed = False
    for stage, span in theirs.items():
        held = spans.get(stage)
        if held is None:
            spans[stage] = dict(span)
            changed = True
        elif span["first"] < held["first"] or span["last"] > held["last"]:
            held["first"] = min(held["first"], span["first"])
            held["last"] = max(held["last"], span["last"])
            changed = True
    return changed


def _join_steps(steps: dict[str, Any], theirs: Mapping[str, Any]) -> bool:
    """Agent steps: the union by event id."""
    changed = False
    for event_id, counts in theirs.items():
        if steps.get(event_id) != counts:
            steps[event_id] = counts
            changed = True
    return changed


def write_runs(
    conn: Connection, table: str, states: Mapping[str, RunState], versions: Mapping[str, Version]
) -> dict[str, str]:
    """Write the rows of ``states``; returns the version each row now has.

    Must run inside a transaction: a row another writer changed since the version
    in ``versions`` stays locked from the failed upsert until its joined state is
    written. The states of such runs are joined in place with the stored ones.
    """
    order = sorted(states)
    rows = [run_row(run_id, states[run_id]) for run_id in order]
    expected = [versions.get(run_id) for run_id in order]
    written = upsert(conn, table, KEY, rows, touch=True, versions=expected)
    stale = [run_id for run_id in order if run_id not in written]
    if stale:
        stored, _ = held_runs(conn, table, stale, lock=True)
        for run_id in stale:
            join(states[run_id], stored[run_id])
        again = [run_row(run_id, states[run_id]) for run_id in stale]
        written.update(upsert(conn, table, KEY, again, touch=True, returning=True))
    return written


def note_versions(versions: dict[str, Version], changes: RunChanges) -> None:
    """After a fold: the version each touched run's state now starts from (read back,
    else the one held, else none)."""
    for run_id in changes.states:
        versions[run_id] = changes.read.get(run_id, versions.get(run_id))


__all__ = ["Version", "join", "note_versions", "write_runs"]
