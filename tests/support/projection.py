"""A projection process writing into a private schema, for the integration tests.

Every test projects into a schema of its own (``search_path`` through the DSN) with
consumer groups of its own, so it never shares rows or partitions with another
test or with the stack's projection process.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from projections.migrate import migrate
from projections.models import ALL_TOPICS, MODELS
from projections.rebuild import end_offsets, status
from projections.store import Checkpoints, write_checkpoints
from tests.support.stack import StackHandle

KEYS = {name: model.key for name, model in MODELS.items()}  # table → key column


def topic_ends(stack: StackHandle) -> Checkpoints:
    """Where every projected topic ends now: a projection started there reads only
    what is published from now on, not the history the earlier tests left."""
    return end_offsets(stack.kafka, ALL_TOPICS)


class Projection:
    """A ``python -m projections`` process writing into one private schema."""

    def __init__(
        self,
        stack: StackHandle,
        log_dir: Path,
        schema: str | None = None,
        start: Checkpoints | None = None,
    ) -> None:
        self.stack = stack
        self.schema = schema or f"proj_{uuid.uuid4().hex[:10]}"
        sep = "&" if "?" in stack.pg_dsn else "?"
        self.dsn = f"{stack.pg_dsn}{sep}options=-csearch_path%3D{self.schema}"
        self.groups = f"test-{self.schema}."
        self.log_dir = log_dir
        self.replicas: list[Projection] = []
        self.log = log_dir / f"{self.schema}.log"
        self.settings: dict[str, str] = {}  # TRACEBOUND_* variables of its own
        self.proc: subprocess.Popen[bytes] | None = None
        self.start_offsets: Checkpoints = dict(start or {})  # none: the whole history
        if schema is None:
            with psycopg.connect(stack.pg_dsn, autocommit=True) as conn:
                conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(self.schema)))
            if start:
                self._begin_at(start)

    def _begin_at(self, start: Checkpoints) -> None:
        """Checkpoints at ``start``, as if the topics had been projected up to there."""
        with self.conn() as conn:
            migrate(conn)
            for model in MODELS.values():
                write_checkpoints(conn, model.name, model.own(start))

    def replica(self) -> Projection:
        """Another process of the same deployment: same schema, same consumer groups."""
        made = Projection(self.stack, self.log_dir, self.schema)
        made.settings = dict(self.settings)
        made.start_offsets = self.start_offsets  # the schema's checkpoints, written once
        made.log = self.log_dir / f"{self.schema}-{len(self.replicas) + 2}.log"
        self.replicas.append(made)
        return made

    def env(self) -> dict[str, str]:
        env = self.stack.env()
        env["TRACEBOUND_PG_DSN"] = self.dsn
        env["TRACEBOUND_PROJECTIONS_GROUP_PREFIX"] = self.groups
        return {**env, **self.settings}

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "projections"], env=self.env(), stdout=out, stderr=out
            )

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def terminate(self) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
                return -9
        return int(self.proc.returncode)

    @contextlib.contextmanager
    def conn(self) -> Iterator[psycopg.Connection[Any]]:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            yield conn

    def answered(self, run_ids: list[str], status: str | None = "answered") -> int:
        """Runs of ``run_ids`` in the read model (with ``status``, or in any status)."""
        with self.conn() as conn:
            try:
                row = conn.execute(
                    "SELECT count(*) FROM diagnosis_run"
                    " WHERE run_id = ANY(%s) AND (%s::text IS NULL OR status = %s)",
                    (run_ids, status, status),
                ).fetchone()
            except psycopg.errors.UndefinedTable:
                return 0
        return int(row[0]) if row else 0

    def wait_logged(self, text: str, timeout_s: float = 60) -> None:
        """Until the process's log holds ``text`` (it fails if the process exits first)."""
        deadline = time.monotonic() + timeout_s
        while text not in self.log.read_text(errors="replace"):
            assert self.proc is not None and self.proc.poll() is None, self.log.read_text()
            assert time.monotonic() < deadline, f"{self.log} never logged {text!r}"
            time.sleep(0.2)

    def wait_caught_up(self, timeout_s: float = 180) -> None:
        deadline = time.monotonic() + timeout_s
        lag = -1
        while time.monotonic() < deadline:
            with contextlib.suppress(psycopg.errors.UndefinedTable), self.conn() as conn:
                lag = sum(m["lag"] for m in status(conn, self.stack.kafka))
                if lag == 0:
                    return
            time.sleep(0.5)
        raise AssertionError(f"projection in {self.schema} still {lag} events behind")

    def snapshot(self) -> dict[str, list[dict[str, Any]]]:
        """Every row of every model ordered by key, without write timestamps."""
        tables: dict[str, list[dict[str, Any]]] = {}
        with self.conn() as conn, conn.cursor(row_factory=dict_row) as cur:
            for table, key in KEYS.items():
                cur.execute(
                    sql.SQL("SELECT * FROM {} ORDER BY {}").format(
                        sql.Identifier(table), sql.Identifier(key)
                    )
                )
                tables[table] = [
                    {k: v for k, v in row.items() if k not in ("created_at", "updated_at")}
                    if table == "diagnosis_run"
                    else row
                    for row in cur.fetchall()
                ]
        return tables


Snapshot = dict[str, list[dict[str, Any]]]


class ProjectionFactory(Protocol):
    """The ``projection`` fixture: a projection into a private schema of its own."""

    def __call__(self, start: Checkpoints | None = None) -> Projection: ...


def differences(left: Snapshot, right: Snapshot, limit: int = 3) -> list[str]:
    """What differs between two snapshots, short enough for an assertion message.

    Rows are matched by their key; for a differing row only the names of the
    differing columns are given (a full diff of thousands of JSON rows is unreadable
    and takes longer to compute than the test has).
    """
    found: list[str] = []
    for table, key in KEYS.items():
        a = {r[key]: r for r in left.get(table, [])}
        b = {r[key]: r for r in right.get(table, [])}
        only_a, only_b = sorted(a.keys() - b.keys()), sorted(b.keys() - a.keys())
        changed = sorted(k for k in a.keys() & b.keys() if a[k] != b[k])
        if only_a or only_b or changed:
            found.append(
                f"{table}: {len(only_a)} rows only left {only_a[:limit]},"
                f" {len(only_b)} only right {only_b[:limit]}, {len(changed)} differ"
                + "".join(
                    f"; {k}: "
                    + ", ".join(
                        _column(c, a[k][c], b[k].get(c)) for c in a[k] if a[k][c] != b[k].get(c)
                    )
                    for k in changed[:limit]
                )
            )
    return found


def _column(name: str, left: Any, right: Any, width: int = 160) -> str:
    return f"{name} {repr(left)[:width]} != {repr(right)[:width]}"


def projections_in_private_schemas(
    stack: StackHandle, tmp_path: Path
) -> Iterator[ProjectionFactory]:
    """Makes projections into private schemas; stops them and drops the schemas afterwards.

    ``start``: checkpoints to begin at (:func:`topic_ends` skips the earlier tests'
    history); none reads every topic from its beginning.

    The body of the ``projection`` fixture (``tests/integration/conftest.py``).
    """
    made: list[Projection] = []

    def make(start: Checkpoints | None = None) -> Projection:
        made.append(Projection(stack, tmp_path, start=start))
        return made[-1]

    yield make
    for p in made:
        for process in (p, *p.replicas):
            if process.proc is not None and process.proc.poll() is None:
                process.proc.kill()
                process.proc.wait(10)
        with psycopg.connect(stack.pg_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(p.schema)))
