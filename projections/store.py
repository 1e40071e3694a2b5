"""PostgreSQL side of the projections: row upserts and checkpoints, in one transaction.

A batch's rows and the checkpoint of every partition it advanced commit together.
Before writing, the batch checks that the checkpoints in the database are still
the ones the process started the batch from (a compare-and-set under an advisory
lock per model). They differ only when someone else moved them — a rebuild that
swapped a new table in, or a zombie instance of this process — and then the
batch is dropped and the consumer seeks to the stored checkpoints instead, so a
row is never lost or applied twice. All SQL is parameterised; table and column
names are composed as identifiers. Text PostgreSQL cannot store (a NUL, in a
text column or a JSONB string) is written with U+FFFD in its place, so an
event carrying one is projected instead of stopping its worker.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb, set_json_dumps, set_json_loads

from projections import stored_state
from projections.run_state import RunState
from projections.runs import answered
from tracebound import fastjson
from tracebound.settings import PostgresSettings

Connection = psycopg.Connection[Any]
REPLACEMENT = "\ufffd"
# ``\u0000`` in JSON text, not preceded by an escaped backslash.
_JSON_NUL = re.compile(rb"(?<!\\)((?:\\\\)*)\\u0000")
TopicPartitionKey = tuple[str, int]
Checkpoints = dict[TopicPartitionKey, int]

JSON_COLUMNS = {
    "plan",
    "resolved_alerts",
    "request",
    "final_answer",
    "timings",
    "self_evaluation",
    "merge_state",
    "input_params",
    "output",
    "backend",
    "retrieval_details",
}


def connect(settings: PostgresSettings | None = None) -> Connection:
    settings = settings or PostgresSettings()
    # Autocommit: every unit of work is an explicit `conn.transaction()` block.
    conn = psycopg.connect(settings.dsn.get_secret_value(), autocommit=True)
    set_json_dumps(json_bytes, context=conn)
    # A run's merge state read back is kilobytes of JSON: orjson reads it several times
    # faster than the standard library (same result, see tracebound.fastjson).
    set_json_loads(_loads, context=conn)
    return conn


def json_bytes(value: Any) -> bytes:
    """JSONB text PostgreSQL accepts: a NUL in a string (``\\u0000``, which JSONB
    refuses) becomes U+FFFD, the replacement character."""
    data = fastjson.dumps_bytes(value)
    return _JSON_NUL.sub(rb"\1\\ufffd", data) if b"\\u0000" in data else data


def _loads(data: bytes | str) -> Any:
    return fastjson.loads(data if isinstance(data, str) else bytes(data).decode())


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
    if column in JSON_COLUMNS and value is not None:
        return Jsonb(value)
    if isinstance(value, str) and "\x00" in value:  # text columns refuse NUL
        return value.replace("\x00", REPLACEMENT)
    return value


def upsert(
    conn: Connection,
    table: str,
    key: str,
    rows: Sequence[dict[str, Any]],
    *,
    when: sql.SQL | None = None,
    touch: bool = False,
    versions: Sequence[str | None] | None = None,
    returning: bool = False,
) -> dict[str, str]:
    """Insert ``rows`` or update them by ``key``.

    ``when`` (with ``{t}`` for the table) limits which existing rows are updated;
    ``touch`` also sets ``updated_at``; ``versions`` (one per row, None: no row
    expected) updates a row only at that version (``xmin``), and a row left as it
    was stays locked until the transaction ends. With ``returning`` or ``versions``,
    returns the version of each row written by key (else nothing).
    """
    if not rows:
        return {}
    columns = list(rows[0])
    target = sql.Identifier(table)
    assignments: list[sql.Composable] = [
        sql.SQL("{c} = EXCLUDED.{c}").format(c=sql.Identifier(c)) for c in columns if c != key
    ]
    if touch:
        assignments.append(sql.SQL("updated_at = now()"))
    if versions is not None:
        when = sql.SQL("WHERE {t}.xmin::text IS NOT DISTINCT FROM %s")
    returning = returning or versions is not None
    query = sql.SQL(
        "INSERT INTO {t} ({cols}) VALUES ({vals}) ON CONFLICT ({key}) DO UPDATE SET {sets}"
        " {when} {returning}"
    ).format(
        t=target,
        cols=sql.SQL(", ").join(sql.Identifier(c) for c in columns),
        vals=sql.SQL(", ").join(sql.Placeholder() for _ in columns),
        key=sql.Identifier(key),
        sets=sql.SQL(", ").join(assignments),
        when=when.format(t=target) if when is not None else sql.SQL(""),
        returning=sql.SQL("RETURNING {key}, xmin::text").format(key=sql.Identifier(key))
        if returning
        else sql.SQL(""),
    )
    params = [tuple(_adapt(c, r[c]) for c in columns) for r in rows]
    if versions is not None:
        params = [(*p, v) for p, v in zip(params, versions, strict=True)]
    written: dict[str, str] = {}
    with conn.cursor() as cur:
        cur.executemany(query, params, returning=returning)
        while returning:
            written.update((str(k), str(v)) for k, v in cur.fetchall())
            returning = bool(cur.nextset())
    return written


def held_runs(
    conn: Connection, table: str, run_ids: list[str], *, lock: bool = False
) -> tuple[dict[str, RunState], dict[str, str]]:
    """The merge states of ``run_ids`` as stored, made whole again, and their row versions
    (``xmin``); runs without a row are absent. ``lock``: locked until the transaction ends."""
    columns = stored_state.COLUMNS
    query = sql.SQL(
        "SELECT run_id, xmin::text, merge_state, {cols} FROM {t} WHERE run_id = ANY(%s) {lock}"
    ).format(
        cols=sql.SQL(", ").join(sql.Identifier(c) for c in columns),
        t=sql.Identifier(table),
        lock=sql.SQL("ORDER BY run_id FOR UPDATE" if lock else ""),
    )
    states: dict[str, RunState] = {}
    versions: dict[str, str] = {}
    for r in conn.execute(query, (run_ids,)).fetchall():
        run_id = str(r[0])
        versions[run_id] = str(r[1])
        states[run_id] = stored_state.restore(r[2], dict(zip(columns, r[3:], strict=True)))
    return states, versions


class RunStates:
    """The merge states of the most recently touched runs, so a batch need not read them back.

    Bounded by run count. Past it, answered runs go first (oldest first: a run
    rarely hears anything after its answer), then the least recently touched:
    when more runs are in flight than fit, as in a burst caught up in time order,
    plain least-recently-used order would drop each state just before its next event.
    A projection worker keeps the states it wrote last (valid only while it is the
    table's one writer and every write it saw was committed: :meth:`clear` whenever a
    transaction fails or the checkpoints moved under it); a rebuild keeps the states it
    has not written yet and writes those that :meth:`keep` drops.
    """

    def __init__(self, max_runs: int = 1000) -> None:
        self._max_runs = max_runs
        self._states: OrderedDict[str, RunState] = OrderedDict()

    def held(self, run_ids: Iterable[str]) -> dict[str, RunState]:
        """The states kept for ``run_ids`` (not copied: the caller merges into them)."""
        return {r: self._states[r] for r in run_ids if r in self._states}

    def keep(self, states: Mapping[str, RunState]) -> dict[str, RunState]:
        """Keep ``states`` as the most recent; returns the states dropped to make room."""
        for run_id, state in states.items():
            self._states[run_id] = state
            self._states.move_to_end(run_id)
        excess = len(self._states) - self._max_runs
        if excess <= 0:
            return {}
        leaving = [r for r, s in self._states.items() if answered(s)][:excess]
        dropped = {run_id: self._states.pop(run_id) for run_id in leaving}
        while len(self._states) > self._max_runs:
            run_id, state = self._states.popitem(last=False)
            dropped[run_id] = state
        return dropped

    def clear(self) -> None:
        self._states.clear()


class Pending(Protocol):
    """The rows a batch commits with its checkpoints (:mod:`projections.live`)."""

    def write(self, conn: Connection, table: str) -> int: ...


def commit_batch(
    conn: Connection,
    model: str,
    rows: Pending,
    expected: Mapping[TopicPartitionKey, int | None],
    advanced: Mapping[TopicPartitionKey, int],
) -> Checkpoints | None:
    """Write the rows of read model ``model`` and its checkpoints atomically.

    ``expected`` holds, for every partition in ``advanced``, the checkpoint the rows
    started from (None: none stored yet). Returns None when committed, or the stored
    checkpoints when they no longer match: nothing is written then, and whoever moved
    them may have rewritten the rows, so the caller forgets what it folded.
    """
    with conn.transaction():
        lock_model(conn, model)
        stored = read_checkpoints(conn, model)
        if any(stored.get(tp) != expected.get(tp) for tp in advanced):
            return stored
        rows.write(conn, model)
        write_checkpoints(conn, model, advanced)
    return None
