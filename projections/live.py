"""What a projection worker folds between two commits, and writes at the next one.

A worker decodes every batch as it comes and folds it in here; the rows and the
checkpoints are written together only once per commit window
(:class:`~projections.settings.ProjectionRuntimeSettings`: ``commit_interval_ms``,
or sooner once ``commit_max_messages`` were folded, or when the worker has read
everything there is and the window is ``commit_min_ms`` old; nothing bounds the rows
a window changes). While catching up,
the events of a run are spread over several batches: folded this way its row is
written once per window instead of once per batch, and the states a window touches
stay in memory, so none is read back.

Nothing is written between two commits, so a crash loses only folding work: the
worker resumes from the last committed checkpoints and folds the same events
again, which gives the same rows (the reducers are idempotent and ignore order).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from projections import reducers
from projections.run_state import RunState
from projections.run_writes import note_versions
from projections.store import Connection, RunStates
from tracebound.codec.documents import EventDoc

# The states a caller already holds of some runs (the others are read from their rows).
Held = Callable[[list[str]], dict[str, RunState]]
# The row version each state started from (:mod:`projections.run_writes`).
Versions = Mapping[str, str | None]


class RowWriter(Protocol):
    """How a read model writes rows into ``table`` (:mod:`projections.models`)."""

    def write_rows(self, conn: Connection, table: str, rows: list[dict[str, Any]]) -> None: ...


class RunFolder(Protocol):
    """How ``diagnosis_run`` folds events into the states of their runs, and writes them."""

    def fold(
        self, conn: Connection, table: str, held: Held | None, events: Sequence[EventDoc]
    ) -> reducers.RunChanges: ...

    def write_states(
        self, conn: Connection, table: str, states: Mapping[str, RunState], versions: Versions
    ) -> dict[str, str]:
        """Write the rows of ``states`` against the row versions they started from
        (:func:`projections.run_writes.write_runs`); returns the versions written."""


class LiveWriter(Protocol):
    """The rows a worker folded since its last commit."""

    def fold(self, conn: Connection, table: str, events: Sequence[EventDoc]) -> None:
        """Fold decoded events in (outside any transaction; may read stored rows)."""

    def pending(self) -> int:
        """Rows waiting for the next commit."""

    def write(self, conn: Connection, table: str) -> int:
        """Write the waiting rows (inside the commit's transaction); returns how many."""

    def committed(self) -> None:
        """The commit that wrote them succeeded."""

    def clear(self) -> None:
        """Forget everything: what was folded will be read and folded again."""


class PendingFacts:
    """Rows that are facts of one event each: of two for one key, the larger event id wins."""

    def __init__(self, model: RowWriter, rows: reducers.KeyedRows) -> None:
        self._model, self._reduce = model, rows
        self._rows: dict[Any, dict[str, Any]] = {}

    def fold(self, conn: Connection, table: str, events: Sequence[EventDoc]) -> None:
        for key, new in self._reduce(events).items():
            held = self._rows.get(key)
            if held is None or new["event_id"] > held["event_id"]:
                self._rows[key] = new

    def pending(self) -> int:
        return len(self._rows)

    def write(self, conn: Connection, table: str) -> int:
        rows = list(self._rows.values())
        self._model.write_rows(conn, table, rows)
        return len(rows)

    def committed(self) -> None:
        self._rows = {}

    def clear(self) -> None:
        self._rows = {}


class PendingRuns:
    """``diagnosis_run`` states changed since the last commit, and those written last.

    The changed states are all kept until the commit writes them; the written ones
    in a bounded :class:`~projections.store.RunStates` (answered runs leave first),
    each with the row version it matches. They save reading rows back while the
    worker is their one writer; when another writer got to a run first, the
    commit joins the two (:mod:`projections.run_writes`). :meth:`clear` on a
    rebalance or a refused commit.
    """

    def __init__(self, model: RunFolder, max_runs: int) -> None:
        self._model = model
        self._written = RunStates(max_runs)
        self._changed: dict[str, RunState] = {}
        self._versions: dict[str, str | None] = {}  # of every run held, changed or written
        self._writing: dict[str, str] = {}  # the versions the commit under way gives

    def _held(self, run_ids: list[str]) -> dict[str, RunState]:
        states = self._written.held(run_ids)
        states.update((r, self._changed[r]) for r in run_ids if r in self._changed)
        return states

    def fold(self, conn: Connection, table: str, events: Sequence[EventDoc]) -> None:
        runs = [e for e in events if e.name in reducers.RUN_EVENTS]
        if not runs:
            return
        changes = self._model.fold(conn, table, self._held, runs)
        note_versions(self._versions, changes)
        self._changed.update((r, changes.states[r]) for r in changes.changed)
        # States read back or kept but left as they were are as good as written ones.
        self._forget(
            self._written.keep({r: s for r, s in changes.states.items() if r not in self._changed})
        )

    def _forget(self, dropped: Mapping[str, RunState]) -> None:
        for run_id in dropped:
            if run_id not in self._changed:
                self._versions.pop(run_id, None)

    def pending(self) -> int:
        return len(self._changed)

    def write(self, conn: Connection, table: str) -> int:
        self._writing = self._model.write_states(conn, table, self._changed, self._versions)
        return len(self._writing)

    def committed(self) -> None:
        written = self._changed
        self._changed = {}
        self._versions.update(self._writing)
        self._writing = {}
        self._forget(self._written.keep(written))

    def clear(self) -> None:
        self._written.clear()
        self._changed = {}
        self._versions.clear()
        self._writing = {}
