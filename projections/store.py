"""PostgreSQL side of the projections: row upserts and checkpoints, in one transaction.

A batch's rows and the checkpoint of every partition it advanced commit together.
Before writing, the batch checks that the checkpoints in the database are still
the ones the process started the batch from (a compare-and-set under an advisory
lock per model). They differ only when someone else moved them — a rebuild that
swapped a new table in, or a zombie instance of this process — and then the
batch is dropped and the consumer seeks to the stored checkpoints instead, so a
row is never lost or applied twice. All SQL is parameterised; table and column
names are composed as identifiers.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb, set_json_dumps

from projections import reducers
from projections.runs import State
from projections.runs import row as runs_row
from projections.settings import MODELS
from tracebound import fastjson
from tracebound.events import Event
from tracebound.settings import PostgresSettings

Connection = psycopg.Connection[Any]
TopicPartitionKey = tuple[str, int]
Checkpoints = dict[TopicPartitionKey, int]

JSON_COLUMNS = {
    "plan",
    "request",
    "final_answer",
    "timings",
    "self_evaluation",
    "merge_state",
    "input_params",
    "output",
    "retrieval_details",
}
UPDATE_WHEN = {
    "diagnosis_run": None,
    "tool_invocation": sql.SQL("WHERE {t}.event_id < EXCLUDED.event_id"),
    "agent_step": sql.SQL("WHERE FALSE"),
}


def connect(settings: PostgresSettings | None = None) -> Connection:
    settings = settings or PostgresSettings()
    # Autocommit: every unit of work is an explicit `conn.transaction()` block.
    conn = psycopg.connect(settings.dsn.get_secret_value(), autocommit=True)
    set_json_dumps(fastjson.dumps_bytes, context=conn)
    return conn


def lock_model(conn: Connection, model: str) -> None:
    """Serialise batches, rebuild swaps and checkpoint edits of one model (this transaction)."""
    conn.execute(
        "SELECT pg_advisory_xact_lock(hashtext(coalesce(current_schema(), '') || %s))",
        (f".projection.{model}",),
    )


def read_checkpoints(conn: Connection, model: str) -> Checkpoints:
    rows = conn.execute(
        "SELECT topic, partition, next_offset FROM projection_checkpoint WHERE projection = %s",
        (model,),
    ).fetchall()
    return {(str(r[0]), int(r[1])): int(r[2]) for r in rows}


def write_checkpoints(
    conn: Connection, model: str, offsets: Mapping[TopicPartitionKey, int]
) -> None:
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO projection_checkpoint (projection, topic, partition, next_offset)"
            " VALUES (%s, %s, %s, %s)"
            " ON CONFLICT (projection, topic, partition)"
            " DO UPDATE SET next_offset = EXCLUDED.next_offset, updated_at = now()",
            [(model, t, p, o) for (t, p), o in sorted(offsets.items())],
        )


def _adapt(column: str, value: Any) -> Any:
    return Jsonb(value) if column in JSON_COLUMNS and value is not None else value


def _upsert(conn: Connection, model: str, table: str, rows: Sequence[dict[str, Any]]) -> None:
    if not rows:
        return
    columns = list(rows[0])
    key = MODELS[model].key
    target = sql.Identifier(table)
    assignments: list[sql.Composable] = [
        sql.SQL("{c} = EXCLUDED.{c}").format(c=sql.Identifier(c)) for c in columns if c != key
    ]
    if model == "diagnosis_run":
        assignments.append(sql.SQL("updated_at = now()"))
    when = UPDATE_WHEN[model]
    query = sql.SQL(
        "INSERT INTO {t} ({cols}) VALUES ({vals}) ON CONFLICT ({key}) DO UPDATE SET {sets} {when}"
    ).format(
        t=target,
        cols=sql.SQL(", ").join(sql.Identifier(c) for c in columns),
        vals=sql.SQL(", ").join(sql.Placeholder() for _ in columns),
        key=sql.Identifier(key),
        sets=sql.SQL(", ").join(assignments),
        when=when.format(t=target) if when is not None else sql.SQL(""),
    )
    with conn.cursor() as cur:
        cur.executemany(query, [tuple(_adapt(c, r[c]) for c in columns) for r in rows])


def _held_runs(conn: Connection, table: str, run_ids: list[str]) -> dict[str, Any]:
    rows = conn.execute(
        sql.SQL("SELECT run_id, merge_state FROM {t} WHERE run_id = ANY(%s)").format(
            t=sql.Identifier(table)
        ),
        (run_ids,),
    ).fetchall()
    return {str(r[0]): r[1] for r in rows}


class RunStateCache:
    """The merge states of the most recently written runs, so a batch need not read them back.

    Valid only while its owner is the table's one writer and every write it saw was
    committed: call :meth:`clear` whenever a transaction fails or the checkpoints moved
    under it. Bounded by run count (least recently written dropped first).
    """

    def __init__(self, max_runs: int = 1000) -> None:
        self._max_runs = max_runs
        self._states: OrderedDict[str, State] = OrderedDict()

    def take(self, run_ids: Iterable[str]) -> dict[str, State]:
        return {r: self._states.pop(r) for r in run_ids if r in self._states}

    def keep(self, states: Mapping[str, State]) -> None:
        for run_id, state in states.items():
            self._states[run_id] = state
            self._states.move_to_end(run_id)
        while len(self._states) > self._max_runs:
            self._states.popitem(last=False)

    def clear(self) -> None:
        self._states.clear()


class DeferredRunWriter:
    """``diagnosis_run`` rows for a rebuild: written when their run leaves memory, or at flush.

    A rebuild is its table's only writer and starts over if it dies, so a row need
    not be written after every batch: each run's state is kept (up to ``max_runs``,
    least recently touched written out first) and its row written about once.
    """

    def __init__(self, conn: Connection, table: str, max_runs: int = 2000) -> None:
        self._conn = conn
        self._table = table
        self._max_runs = max_runs
        self._states: OrderedDict[str, State] = OrderedDict()
        self._dirty: set[str] = set()

    def apply(self, events: Sequence[Event]) -> int:
        """Fold ``events`` in; returns the rows written to make room."""
        run_ids = sorted({e.run_id for e in events if isinstance(e, reducers.RUN_EVENTS)})
        missing = [r for r in run_ids if r not in self._states]
        held = _held_runs(self._conn, self._table, missing) if missing else {}
        held.update({r: self._states[r] for r in run_ids if r in self._states})
        changes = reducers.reduce_runs(held, events)
        for run_id in run_ids:
            self._states[run_id] = changes.states[run_id]
            self._states.move_to_end(run_id)
        self._dirty |= changes.changed
        leaving: dict[str, State] = {}
        while len(self._states) > self._max_runs:
            run_id, state = self._states.popitem(last=False)
            if run_id in self._dirty:
                self._dirty.discard(run_id)
                leaving[run_id] = state
        return self._write(leaving)

    def flush(self) -> int:
        """Write every row not written yet; returns how many."""
        rows = {r: self._states[r] for r in self._dirty}
        self._dirty.clear()
        return self._write(rows)

    def _write(self, states: Mapping[str, State]) -> int:
        rows = [runs_row(run_id, states[run_id]) for run_id in sorted(states)]
        _upsert(self._conn, "diagnosis_run", self._table, rows)
        return len(rows)


def write_events(
    conn: Connection,
    model: str,
    table: str,
    events: Iterable[Event],
    cache: RunStateCache | None = None,
) -> int:
    """Apply decoded events to ``table`` (the live model or a rebuild); returns rows written."""
    events = list(events)
    if model == "diagnosis_run":
        run_ids = sorted({e.run_id for e in events})
        if not run_ids:
            return 0
        held = cache.take(run_ids) if cache is not None else {}
        missing = [r for r in run_ids if r not in held]
        if missing:
            held.update(_held_runs(conn, table, missing))
        changes = reducers.reduce_runs(held, events)
        rows = changes.rows()
        _upsert(conn, model, table, rows)
        if cache is not None:
            cache.keep(changes.states)
        return len(rows)
    rows = list(reducers.keyed_rows(model, events).values())
    _upsert(conn, model, table, rows)
    return len(rows)


def commit_batch(
    conn: Connection,
    model: str,
    events: Sequence[Event],
    expected: Mapping[TopicPartitionKey, int | None],
    advanced: Mapping[TopicPartitionKey, int],
    *,
    cache: RunStateCache | None = None,
) -> Checkpoints | None:
    """Write a batch and its checkpoints atomically.

    ``expected`` holds, for every partition in ``advanced``, the checkpoint the batch
    started from (None: none stored yet). Returns None when committed, or the stored
    checkpoints when they no longer match (nothing is written then, and ``cache`` is
    emptied: whoever moved them may have rewritten the rows).
    """
    try:
        with conn.transaction():
            lock_model(conn, model)
            stored = read_checkpoints(conn, model)
            if any(stored.get(tp) != expected.get(tp) for tp in advanced):
                if cache is not None:
                    cache.clear()
                return stored
            write_events(conn, model, model, events, cache)
            write_checkpoints(conn, model, advanced)
    except BaseException:
        if cache is not None:
            cache.clear()  # it may hold states this rolled-back batch never wrote
        raise
    return None
