"""Alertmanager re-sends a group every ``repeat_interval`` (and on retries); that is no new run.

The decision lives in PostgreSQL so it holds across restarts and replicas of the
ingest. For a group it runs in one transaction: ``INSERT … ON CONFLICT DO
NOTHING RETURNING`` claims the group's key; the request is published to Kafka
*while the row is still uncommitted*, and the row commits only after the broker
acknowledged. So a concurrent re-send waits on the row and then sees the
committed run, a failed publish rolls the claim back (Alertmanager's retry
starts the run for real), and a recorded run id always names a published run.
The remaining gap — Kafka acknowledged, then the commit failed — can at worst
start the same group twice; it never loses one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import LiteralString

import psycopg
from psycopg.rows import TupleRow

from services.ingest.alertmanager import AlertGroup
from tracebound.errors import TransientError
from tracebound.events import Alert, DiagnosisRequested

CONNECT_TIMEOUT_S = 5
Connection = psycopg.Connection[TupleRow]

DDL: tuple[LiteralString, ...] = (
    """
    CREATE TABLE IF NOT EXISTS tb_ingest_fingerprint (
        dedup_key text PRIMARY KEY,
        group_key text NOT NULL,
        fingerprints text[] NOT NULL,
        run_id text NOT NULL,
        first_seen timestamptz NOT NULL DEFAULT now()
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS tb_ingest_resolved (
        fingerprint text NOT NULL,
        alertname text NOT NULL,
        service text,
        ends_at text NOT NULL,
        received_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (fingerprint, ends_at)
    )
    """,
)


@dataclass(frozen=True, slots=True)
class Claimed:
    run_id: str
    deduplicated: bool


@contextlib.contextmanager
def _connect(dsn: str) -> Iterator[Connection]:
    """A connection that commits on success; database failures become transient."""
    try:
        conn = psycopg.connect(dsn, connect_timeout=CONNECT_TIMEOUT_S)
    except psycopg.OperationalError as exc:
        raise TransientError(f"PostgreSQL unreachable: {exc}".strip()) from exc
    try:
        with conn:
            yield conn
    except psycopg.OperationalError as exc:
        raise TransientError(f"PostgreSQL failed: {exc}".strip()) from exc


class DedupStore:
    """The PostgreSQL half of the webhook: dedup of firing groups, record of resolved ones."""

    def __init__(self, dsn: str, window_s: int) -> None:
        self._dsn = dsn
        self._window_s = window_s
        self._ready = False

    def ensure_schema(self) -> None:
        with _connect(self._dsn) as conn:
            for statement in DDL:
                conn.execute(statement)  # fixed DDL text, no values
        self._ready = True

    def claim(
        self,
        group: AlertGroup,
        request: DiagnosisRequested,
        publish: Callable[[DiagnosisRequested], None],
    ) -> Claimed:
        """The group's run: an existing one inside the window, else ``request`` published."""
        if not self._ready:
            self.ensure_schema()
        with _connect(self._dsn) as conn, conn.transaction():
            row = conn.execute(
                "INSERT INTO tb_ingest_fingerprint (dedup_key, group_key, fingerprints, run_id) "
                "VALUES (%s, %s, %s, %s) ON CONFLICT (dedup_key) DO NOTHING RETURNING run_id",
                (group.dedup_key, group.key, list(group.fingerprints), request.run_id),
            ).fetchone()
            if row is None:
                seen = conn.execute(
                    "SELECT run_id, first_seen > now() - make_interval(secs => %s) "
                    "FROM tb_ingest_fingerprint WHERE dedup_key = %s FOR UPDATE",
                    (self._window_s, group.dedup_key),
                ).fetchone()
                if seen is not None and seen[1]:
                    return Claimed(str(seen[0]), deduplicated=True)
                # Outside the window: the same alerts firing again are a new incident.
                conn.execute(
                    "UPDATE tb_ingest_fingerprint SET run_id = %s, first_seen = now() "
                    "WHERE dedup_key = %s",
                    (request.run_id, group.dedup_key),
                )
            publish(request)  # raises → the transaction rolls back, nothing is claimed
        return Claimed(request.run_id, deduplicated=False)

    def record_resolved(self, alerts: list[Alert]) -> int:
        """Keep resolved alerts for the record; a re-sent resolution is stored once."""
        if not alerts:
            return 0
        if not self._ready:
            self.ensure_schema()
        with _connect(self._dsn) as conn, conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO tb_ingest_resolved (fingerprint, alertname, service, ends_at) "
                "VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
                [
                    (
                        a.fingerprint,
                        a.labels.get("alertname", ""),
                        a.labels.get("service"),
                        a.endsAt,
                    )
                    for a in alerts
                ],
            )
        return len(alerts)
