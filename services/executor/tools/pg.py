"""PostgreSQL plumbing shared by the log store and the knowledge base.

Why here: both stores create their tables on first use and load a shipped data
set idempotently. ``tb_seed`` records a content hash per data set, and an
advisory lock serialises the check-and-load, so any number of executor replicas
may start at once and the data is loaded once — and again only when it changed.
A store looks at its data set on its first search and then every
``SEED_RECHECK_S`` (an edited runbook is served within that time), not on every
search. Our own database being unreachable is transient (the runtime retries), so every
connection or operational failure surfaces as :class:`TransientError`.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import LiteralString

import psycopg
from psycopg.rows import TupleRow

from tracebound.errors import TransientError
from tracebound.runtime.stages import CLOCK

CONNECT_TIMEOUT_S = 5
# How long a store trusts its last look at its data set: reading and hashing the
# shipped files costs more than the search itself, so a search does it this seldom.
SEED_RECHECK_S = 30.0

Connection = psycopg.Connection[TupleRow]

# Any constant shared by every process that seeds tool tables.
_SEED_LOCK_KEY = 0x7B_7001

SEED_DDL: LiteralString = """
CREATE TABLE IF NOT EXISTS tb_seed (
    name text PRIMARY KEY,
    content_hash text NOT NULL,
    loaded_at timestamptz NOT NULL DEFAULT now()
)
"""


_local = threading.local()


class SeedCheck:
    """When a store looks again whether its data set changed: first use, then every interval."""

    def __init__(
        self, interval_s: float = SEED_RECHECK_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._interval_s = interval_s
        self._clock = clock
        self._checked_at: float | None = None

    def ready(self, conn: Connection, ensure_ready: Callable[[Connection], object]) -> None:
        """Run the store's ``ensure_ready`` on ``conn`` when the check is due."""
        now = self._clock()
        if self._checked_at is None or now - self._checked_at >= self._interval_s:
            ensure_ready(conn)
            self._checked_at = now


def _cached(dsn: str) -> Connection:
    """This thread's open connection to ``dsn``, made on first use or after a failure."""
    cache: dict[str, Connection] = getattr(_local, "connections", None) or {}
    _local.connections = cache
    conn = cache.get(dsn)
    if conn is None or conn.closed or conn.broken:
        try:
            conn = psycopg.connect(dsn, connect_timeout=CONNECT_TIMEOUT_S, autocommit=True)
        except psycopg.OperationalError as exc:
            raise TransientError(f"PostgreSQL unreachable: {exc}".strip()) from exc
        cache[dsn] = conn
    return conn


def _drop(dsn: str) -> None:
    conn = getattr(_local, "connections", {}).pop(dsn, None)
    if conn is not None:
        with contextlib.suppress(psycopg.Error):
            conn.close()


@contextlib.contextmanager
def connect(dsn: str) -> Iterator[Connection]:
    """A connection in autocommit mode; database failures become transient.

    Each tool thread keeps its connection open between calls (a new connection per
    query cost more than the query); a failed one is dropped and made anew next time.
    A search only reads, so each of its statements runs on its own: no ``BEGIN`` and
    ``COMMIT`` round trips around it (they were two of a search's three). What must
    be atomic (loading a data set) opens its own transaction.
    """
    conn = _cached(dsn)
    try:
        with CLOCK.timing("postgres"):
            yield conn
    except psycopg.OperationalError as exc:
        _drop(dsn)
        raise TransientError(f"PostgreSQL failed: {exc}".strip()) from exc
    except BaseException:
        try:
            conn.rollback()
        except psycopg.Error:
            _drop(dsn)
        raise


def ensure_seeded(
    conn: Connection,
    name: str,
    content_hash: str,
    table: str,
    *,
    ddl: tuple[LiteralString, ...],
    load: Callable[[Connection], None],
) -> bool:
    """Create the tables and (re)load data set ``name`` unless its hash is current.

    Returns whether a load happened. Runs in one transaction: readers see the old
    data set or the new one, never a half-loaded table. A missing ``table`` is
    loaded whatever ``tb_seed`` says, so a dropped table heals itself.
    """
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SEED_LOCK_KEY,))
        found = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (table,)).fetchone()
        conn.execute(SEED_DDL)
        for statement in ddl:
            conn.execute(statement)  # fixed DDL text, no values
        row = conn.execute("SELECT content_hash FROM tb_seed WHERE name = %s", (name,)).fetchone()
        table_existed = bool(found and found[0])
        if table_existed and row is not None and row[0] == content_hash:
            return False
        load(conn)
        conn.execute(
            "INSERT INTO tb_seed (name, content_hash, loaded_at) VALUES (%s, %s, now()) "
            "ON CONFLICT (name) DO UPDATE SET content_hash = EXCLUDED.content_hash, "
            "loaded_at = EXCLUDED.loaded_at",
            (name, content_hash),
        )
        return True
