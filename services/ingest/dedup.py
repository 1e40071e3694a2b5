"""Alertmanager re-sends a firing incident until it resolves; that is no new run.

An *incident* is one alert (its label fingerprint) from one ``startsAt``:
Alertmanager keeps ``startsAt`` while the alert fires, through every
``repeat_interval`` and retry, and a resolution followed by a new firing gives a
new one. So a group whose firing incidents are all known returns the run that
has them, however long ago that was, and any new incident in a group starts a
run. Alerts without ``startsAt`` (hand-written files) cannot tell incidents
apart; for them only the dedup window separates one from the next.

The decision lives in PostgreSQL so it holds across restarts, replicas of the
ingest and the readers of the alerts topic. For a group it runs in one
transaction: ``INSERT … ON CONFLICT`` claims the group's incidents; the request
is published to Kafka *while the rows are still uncommitted*, and the rows
commit only after the broker acknowledged. So a concurrent re-send waits on the
rows and then sees the committed run, a failed publish rolls the claim back
(the sender's retry starts the run for real), and a recorded run id always
names a published run. The remaining gap — Kafka acknowledged, then the commit
failed — can at worst start the same incident twice; it never loses one.

Resolved alerts are recorded the same way and find the run of their incident
(same fingerprint and ``startsAt``): an ``AlertsResolved`` event keyed by that
run is published inside the transaction that records them, once per resolution.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import LiteralString

import psycopg
from psycopg.rows import TupleRow

from services.ingest.alertmanager import SERVICE, AlertGroup
from tracebound.errors import TransientError
from tracebound.events import Alert, AlertsResolved, DiagnosisRequested
from tracebound.events import Producer as ProducerRef

CONNECT_TIMEOUT_S = 5
Connection = psycopg.Connection[TupleRow]

DDL: tuple[LiteralString, ...] = (
    """
    CREATE TABLE IF NOT EXISTS tb_ingest_incident (
        group_key text NOT NULL,
        fingerprint text NOT NULL,
        starts_at text NOT NULL,
        run_id text NOT NULL,
        first_seen timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (group_key, fingerprint, starts_at)
    )
    """,
    "CREATE INDEX IF NOT EXISTS tb_ingest_incident_alert_idx "
    "ON tb_ingest_incident (fingerprint, starts_at)",
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
    "ALTER TABLE tb_ingest_resolved ADD COLUMN IF NOT EXISTS starts_at text",
    "ALTER TABLE tb_ingest_resolved ADD COLUMN IF NOT EXISTS run_id text",
    # The earlier per-fingerprint-set table: incidents replace it.
    "DROP TABLE IF EXISTS tb_ingest_fingerprint",
)

CLAIM: LiteralString = (
    "INSERT INTO tb_ingest_incident (group_key, fingerprint, starts_at, run_id) "
    "SELECT %(group)s, f, s, %(run)s FROM unnest(%(fps)s::text[], %(starts)s::text[]) AS t(f, s) "
    "ON CONFLICT (group_key, fingerprint, starts_at) DO UPDATE "
    "SET run_id = EXCLUDED.run_id, first_seen = now() "
    "WHERE tb_ingest_incident.starts_at = '' "
    "AND tb_ingest_incident.first_seen <= now() - make_interval(secs => %(window)s) "
    "RETURNING fingerprint"
)
HOLDER: LiteralString = (
    "SELECT run_id FROM tb_ingest_incident "
    "WHERE group_key = %(group)s "
    "AND (fingerprint, starts_at) IN (SELECT * FROM unnest(%(fps)s::text[], %(starts)s::text[])) "
    "ORDER BY first_seen DESC, run_id LIMIT 1"
)
RESOLVE: LiteralString = (
    "INSERT INTO tb_ingest_resolved (fingerprint, alertname, service, ends_at, starts_at, run_id) "
    "VALUES (%(fp)s, %(name)s, %(service)s, %(ends)s, %(starts)s, "
    "(SELECT run_id FROM tb_ingest_incident WHERE fingerprint = %(fp)s AND starts_at = %(starts)s "
    "ORDER BY first_seen LIMIT 1)) "
    "ON CONFLICT DO NOTHING RETURNING run_id"
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


def resolution_events(
    resolved: Sequence[tuple[str, Alert]], requested_by: str
) -> list[AlertsResolved]:
    """One ``AlertsResolved`` per run, with its resolved alerts in the order received."""
    by_run: dict[str, list[Alert]] = {}
    for run_id, alert in resolved:
        by_run.setdefault(run_id, []).append(alert)
    return [
        AlertsResolved(
            run_id=run_id,
            producer=ProducerRef(service=SERVICE),
            alerts=tuple(alerts),
            requested_by=requested_by,
        )
        for run_id, alerts in by_run.items()
    ]


class DedupStore:
    """The PostgreSQL half of the intake: incidents of firing groups, and their resolutions."""

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
        """The run of the group's incidents when all are known, else ``request`` published."""
        if not self._ready:
            self.ensure_schema()
        params = {
            "group": group.key,
            "run": request.run_id,
            "fps": [fp for fp, _ in group.incidents],
            "starts": [at for _, at in group.incidents],
            "window": self._window_s,
        }
        with _connect(self._dsn) as conn, conn.transaction():
            if not conn.execute(CLAIM, params).fetchall():
                held = conn.execute(HOLDER, params).fetchone()
                if held is not None:
                    return Claimed(str(held[0]), deduplicated=True)
            publish(request)  # raises → the transaction rolls back, nothing is claimed
        return Claimed(request.run_id, deduplicated=False)

    def record_resolved(
        self,
        alerts: Sequence[Alert],
        requested_by: str,
        publish: Callable[[list[AlertsResolved]], None],
    ) -> int:
        """Record resolved alerts once each; publish the new ones on the runs they resolve.

        A resolution of an incident no run has (it fired before the ingest saw it) is
        recorded without an event.
        """
        if not alerts:
            return 0
        if not self._ready:
            self.ensure_schema()
        fresh: list[tuple[str, Alert]] = []
        with _connect(self._dsn) as conn, conn.transaction():
            for alert in alerts:
                row = conn.execute(
                    RESOLVE,
                    {
                        "fp": alert.fingerprint,
                        "name": alert.labels.get("alertname", ""),
                        "service": alert.labels.get("service"),
                        "ends": alert.endsAt,
                        "starts": alert.startsAt,
                    },
                ).fetchone()
                if row is not None and row[0] is not None:
                    fresh.append((str(row[0]), alert))
            events = resolution_events(fresh, requested_by)
            if events:
                publish(events)  # raises → rolled back, the resend records them again
        return len(alerts)
