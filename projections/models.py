"""The read models as objects: each knows its table, its events (so its topics) and how
its rows are written.

Which events feed which model is declared in the topology
(:data:`tracebound.topology.READ_MODELS`); this module adds the behaviour. The
projection workers, a rebuild and the status report treat every model alike and
ask it to write, so a new model is one class here and one line there, not a new
branch in each of them.

Every model is its own consumer group (``<group_prefix><name>``), so one slow model
never holds the others back and each resumes from its own checkpoint.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from psycopg import sql

from projections import reducers, runs
from projections.live import Held, LiveWriter, PendingFacts, PendingRuns, Versions
from projections.run_state import RunState
from projections.run_writes import note_versions, write_runs
from projections.settings import ProjectionSettings
from projections.store import Checkpoints, Connection, RunStates, held_runs, upsert
from tracebound.codec.documents import EventDoc
from tracebound.errors import InvalidInputError
from tracebound.topology import READ_MODELS, ReadModelSpec

Events = Sequence[reducers.Item]
REBUILD_RUNS = 2000  # run states a rebuild keeps in memory before writing the oldest
LIVE_RUNS = 500  # written run states a projection worker keeps, so as not to read them back


class RebuildWriter(Protocol):
    """Writes a rebuild's batches into the new table; :meth:`flush` writes what it held back."""

    def apply(self, events: Sequence[EventDoc]) -> int: ...

    def flush(self) -> int: ...


class ReadModel:
    """One read model: its table (``name``), key column, events and topics."""

    def __init__(self, spec: ReadModelSpec) -> None:
        self.name = spec.name
        self.key = spec.key
        self.topics = spec.topics
        self.events: frozenset[str] = frozenset(spec.events)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    def group(self, settings: ProjectionSettings) -> str:
        return f"{settings.group_prefix}{self.name}"

    def own(self, offsets: Checkpoints) -> Checkpoints:
        """The offsets of this model's topics among ``offsets``."""
        return {key: offset for key, offset in offsets.items() if key[0] in self.topics}

    def live_writer(self) -> LiveWriter:
        """What a projection worker folds its batches into between commits."""
        raise NotImplementedError

    def write(self, conn: Connection, table: str, events: Events) -> int:
        """Apply decoded events to ``table`` (the live model or a rebuild); returns rows written."""
        raise NotImplementedError

    def rebuild_writer(self, conn: Connection, table: str) -> RebuildWriter:
        return _Immediate(self, conn, table)


class _Immediate:
    """A rebuild writer that writes every batch as it comes."""

    def __init__(self, model: ReadModel, conn: Connection, table: str) -> None:
        self._model, self._conn, self._table = model, conn, table

    def apply(self, events: Sequence[EventDoc]) -> int:
        return self._model.write(self._conn, self._table, events)

    def flush(self) -> int:
        return 0


class FactModel(ReadModel):
    """A model with one row per event (``tool_invocation``, ``agent_step``, ``dead_letter``).

    ``update_when`` says which stored rows a re-delivered or competing event may
    overwrite (``{t}`` is the table).
    """

    def __init__(self, spec: ReadModelSpec, rows: reducers.KeyedRows, update_when: sql.SQL) -> None:
        super().__init__(spec)
        self.rows = rows
        self.update_when = update_when

    def live_writer(self) -> LiveWriter:
        return PendingFacts(self, self.rows)

    def write(self, conn: Connection, table: str, events: Events) -> int:
        rows = list(self.rows(events).values())
        self.write_rows(conn, table, rows)
        return len(rows)

    def write_rows(self, conn: Connection, table: str, rows: list[dict[str, Any]]) -> None:
        upsert(conn, table, self.key, rows, when=self.update_when)


class RunModel(ReadModel):
    """``diagnosis_run``: one row per run, merged from all its events (:mod:`projections.runs`)."""

    def live_writer(self) -> LiveWriter:
        # Emptied on every rebalance, since another instance may write the runs of
        # partitions it held meanwhile.
        return PendingRuns(self, LIVE_RUNS)

    def fold(
        self, conn: Connection, table: str, held: Held | None, events: Events
    ) -> reducers.RunChanges:
        """Merge ``events`` into the states of their runs: those ``held`` gives, else stored."""
        docs = [runs.as_doc(e) for e in events]
        run_ids = sorted({d.data["run_id"] for d in docs})
        states = held(run_ids) if held is not None else {}
        missing = [r for r in run_ids if r not in states]
        read: dict[str, str] = {}
        if missing:
            stored, read = held_runs(conn, table, missing)
            states.update(stored)
        changes = reducers.reduce_runs(states, docs)
        changes.read = read
        return changes

    def write(self, conn: Connection, table: str, events: Events) -> int:
        if not events:
            return 0
        changes = self.fold(conn, table, None, events)
        changed = {r: changes.states[r] for r in changes.changed}
        return len(self.write_states(conn, table, changed, changes.read))

    def write_states(
        self, conn: Connection, table: str, states: Mapping[str, RunState], versions: Versions
    ) -> dict[str, str]:
        return write_runs(conn, table, states, versions)

    def rebuild_writer(self, conn: Connection, table: str) -> RebuildWriter:
        return _DeferredRuns(self, conn, table)


class _DeferredRuns:
    """``diagnosis_run`` rows for a rebuild: written when their run leaves memory, or at flush.

    A rebuild starts over if it dies, so a row need not be written after every
    batch: each run's state is kept (up to :data:`REBUILD_RUNS`, least recently
    touched written out first) and its row written about once. Rebuild groups
    write runs of different partitions; a run that a partition-count change
    spread over two groups is joined by :mod:`projections.run_writes`.
    """

    def __init__(self, model: RunModel, conn: Connection, table: str) -> None:
        self._model, self._conn, self._table = model, conn, table
        self._states = RunStates(REBUILD_RUNS)
        self._dirty: set[str] = set()
        self._versions: dict[str, str | None] = {}  # of the runs held

    def apply(self, events: Sequence[EventDoc]) -> int:
        """Fold ``events`` in; returns the rows written to make room."""
        mine = [e for e in events if e.name in reducers.RUN_EVENTS]
        changes = self._model.fold(self._conn, self._table, self._states.held, mine)
        note_versions(self._versions, changes)
        self._dirty |= changes.changed
        dropped = self._states.keep({r: changes.states[r] for r in sorted(changes.states)})
        leaving = {r: s for r, s in dropped.items() if r in self._dirty}
        self._dirty -= set(leaving)
        written = self._write(leaving)
        for run_id in dropped:
            self._versions.pop(run_id, None)
        return written

    def flush(self) -> int:
        """Write every row not written yet; returns how many."""
        rows = self._states.held(self._dirty)
        self._dirty.clear()
        return self._write(rows)

    def _write(self, states: Mapping[str, RunState]) -> int:
        written = self._model.write_states(self._conn, self._table, states, self._versions)
        self._versions.update(written)
        return len(written)


_SPECS = {spec.name: spec for spec in READ_MODELS}
MODELS: dict[str, ReadModel] = {
    m.name: m
    for m in (
        RunModel(_SPECS["diagnosis_run"]),
        FactModel(
            _SPECS["tool_invocation"],
            reducers.INVOCATION_ROWS,
            # of two events for one invocation the larger event id wins, as in the reducer
            sql.SQL("WHERE {t}.event_id < EXCLUDED.event_id"),
        ),
        # a model call is written once; a re-delivery changes nothing
        FactModel(_SPECS["agent_step"], reducers.STEP_ROWS, sql.SQL("WHERE FALSE")),
        # so is a dead letter
        FactModel(_SPECS["dead_letter"], reducers.DEAD_LETTER_ROWS, sql.SQL("WHERE FALSE")),
    )
}
ALL_TOPICS: tuple[str, ...] = tuple(dict.fromkeys(t for m in MODELS.values() for t in m.topics))


def select_models(name: str | None) -> list[ReadModel]:
    """One model by name, or all of them; an unknown name is a usage error."""
    if name is None:
        return list(MODELS.values())
    if name not in MODELS:
        raise InvalidInputError(f"unknown read model {name!r}; choose from {', '.join(MODELS)}")
    return [MODELS[name]]
