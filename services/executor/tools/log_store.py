"""The embedded log backend: log records in PostgreSQL with full-text search.

Why PostgreSQL: the project already runs it for read models, and its text search
(``websearch_to_tsquery`` over a generated ``tsvector`` with a GIN index) is
enough for the demo environment. The demo records are loaded on first use and
reloaded only when their content hash changes. Nothing else writes log records
here, so the store is offered only as the ``demo`` logs backend: searching it
outside the demo would present the shipped records as a live system's logs.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, LiteralString

import psycopg
from psycopg.types.json import Jsonb

from services.executor.tools.demo_env import LogRow, format_ts, log_rows_at, rows_hash
from services.executor.tools.logs import MAX_SHAPES, LogPage, LogQuery, LogShape, shape_message
from services.executor.tools.pg import Connection, SeedCheck, connect, ensure_seeded

DEMO_ORIGIN = "demo"
SEED_NAME = "demo-logs"
LOG_TABLE = "tb_log_record"

# message + service + instance + level, plus the string values of metrics
# (structured fields such as component=HikariCP), all with the 'simple' config:
# log text is identifiers and numbers, not prose to stem.
LOG_DDL: tuple[LiteralString, ...] = (
    """
    CREATE TABLE IF NOT EXISTS tb_log_record (
        id bigserial PRIMARY KEY,
        origin text,
        topic text NOT NULL,
        ts timestamptz NOT NULL,
        level text NOT NULL,
        service text NOT NULL,
        instance text NOT NULL DEFAULT '',
        message text NOT NULL,
        metrics jsonb NOT NULL DEFAULT '{}'::jsonb,
        search tsvector GENERATED ALWAYS AS (
            to_tsvector('simple', message || ' ' || service || ' ' || instance || ' ' || level)
            -- dotted identifiers (java.lang.OutOfMemoryError) are one token to the parser;
            -- index their parts too, so a search for OutOfMemoryError finds them
            || to_tsvector('simple', regexp_replace(message, '[.:=/]+', ' ', 'g'))
            || jsonb_to_tsvector('simple', metrics, '["string"]')
        ) STORED
    )
    """,
    "CREATE INDEX IF NOT EXISTS tb_log_record_search_idx ON tb_log_record USING gin (search)",
    "CREATE INDEX IF NOT EXISTS tb_log_record_topic_ts_idx ON tb_log_record (topic, ts)",
)

# What a search matches: its topic, words, services, level and window.
_MATCH: LiteralString = """
FROM tb_log_record
WHERE topic = %(topic)s
  AND search @@ websearch_to_tsquery('simple', %(text)s)
  AND service = ALL(%(services)s::text[])
  AND (%(level)s::text IS NULL OR upper(level) = %(level)s::text)
  AND ts > %(since)s AND ts <= %(until)s
"""

_SEARCH_SQL: LiteralString = (
    "SELECT ts, level, service, instance, message, metrics, count(*) OVER () AS total"
    + _MATCH
    + "ORDER BY ts DESC, id DESC LIMIT %(limit)s"
)

# Each run of digits as <N>, as the VictoriaLogs backend writes it (replace_regexp).
_SHAPES_SQL: LiteralString = (
    "SELECT regexp_replace(message, '[0-9]+', '<N>', 'g') AS shape, upper(level),"
    " count(*) AS hits, min(ts), max(ts)"
    + _MATCH
    + "GROUP BY 1, 2 ORDER BY hits DESC, 1 LIMIT %(limit)s"
)

_INSERT_SQL: LiteralString = """
INSERT INTO tb_log_record (origin, topic, ts, level, service, instance, message, metrics)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s)
"""


class PostgresLogStore:
    """``LogSearch`` over ``tb_log_record``; windows end at the store's clock."""

    layer = "postgres"

    def __init__(
        self,
        dsn: str,
        now: Callable[[], datetime],
        demo_data_dir: Path | None = None,
    ) -> None:
        self._dsn = dsn
        self._now = now
        self._demo_data_dir = demo_data_dir
        self._seeded: str | None = None
        self._seed_check = SeedCheck()

    def _demo_rows(self) -> list[LogRow]:
        assert self._demo_data_dir is not None
        return log_rows_at(self._now(), self._demo_data_dir)

    def ensure_ready(self, conn: Connection) -> bool:
        """Create the table and load the demo records if missing or changed."""
        if self._demo_data_dir is None:
            if self._seeded is None:
                ensure_seeded(
                    conn, "log-schema", "v1", LOG_TABLE, ddl=LOG_DDL, load=lambda _c: None
                )
                self._seeded = "schema"
            return False
        rows = self._demo_rows()
        digest = rows_hash(rows)
        if self._seeded == digest:
            return False

        def load(c: Connection) -> None:
            c.execute("DELETE FROM tb_log_record WHERE origin = %s", (DEMO_ORIGIN,))
            with c.cursor() as cur:
                cur.executemany(_INSERT_SQL, [_insert_values(r) for r in rows])

        loaded = ensure_seeded(conn, SEED_NAME, digest, LOG_TABLE, ddl=LOG_DDL, load=load)
        self._seeded = digest
        return loaded

    def _rows(self, sql: LiteralString, query: LogQuery, limit: int) -> list[tuple[Any, ...]]:
        since, until = query.bounds(self._now())
        params: dict[str, Any] = {
            "topic": query.topic,
            "text": query.text,
            "services": list(query.services),
            "level": query.level,
            "since": since,
            "until": until,
            "limit": limit,
        }
        with connect(self._dsn) as conn:
            self._seed_check.ready(conn, self.ensure_ready)
            try:
                return conn.execute(sql, params).fetchall()
            except psycopg.errors.UndefinedTable:
                # dropped behind our back: recreate, reload, ask again
                conn.rollback()
                self._seeded = None
                self.ensure_ready(conn)
                return conn.execute(sql, params).fetchall()

    def shapes(self, query: LogQuery) -> list[LogShape]:
        rows = self._rows(_SHAPES_SQL, query, MAX_SHAPES)
        return [LogShape(shape_message(m), lv, int(n), a, b) for m, lv, n, a, b in rows]

    def search(self, query: LogQuery) -> LogPage:
        rows = self._rows(_SEARCH_SQL, query, query.limit)
        records = [
            {
                "timestamp": format_ts(ts),
                "level": level,
                "service": service,
                "instance": instance,
                "message": message,
                "metrics": metrics,
            }
            for ts, level, service, instance, message, metrics, _total in reversed(rows)
        ]
        total = int(rows[0][6]) if rows else 0
        return LogPage(records=records, total=total)


def _insert_values(row: LogRow) -> tuple[object, ...]:
    return (
        DEMO_ORIGIN,
        row.topic,
        row.ts,
        row.level,
        row.service,
        row.instance,
        row.message,
        Jsonb(row.metrics),
    )
