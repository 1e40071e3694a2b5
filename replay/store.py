"""Storing reports in the eval tables (migration ``0002_eval``).

Why here and nowhere else: a replay writes nothing but its own report — never a
topic, never a read model. The report and its case rows commit in one
transaction, so a listed report always has all its cases. Migrations are applied
first (idempotent), so storing works on a database the projections never set up.
"""

from __future__ import annotations

import json
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from projections.migrate import migrate
from replay.report import Report
from tracebound.errors import TransientError
from tracebound.settings import PostgresSettings

_INSERT_REPORT = """
INSERT INTO eval_report (kind, created_at, baseline, candidate, summary, per_run)
VALUES (%s, %s, %s, %s, %s, %s)
RETURNING id
"""
_INSERT_CASE = """
INSERT INTO eval_case_result (report_id, case_id, passed, reasons, run)
VALUES (%s, %s, %s, %s, %s)
"""


def _json(value: Any) -> Jsonb:
    return Jsonb(value, dumps=_dumps)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def store_report(report: Report, settings: PostgresSettings | None = None) -> int:
    """Insert ``report`` (and its cases); sets and returns its id."""
    settings = settings or PostgresSettings()
    try:
        with psycopg.connect(settings.dsn.get_secret_value(), autocommit=True) as conn:
            migrate(conn)
            with conn.transaction():
                row = conn.execute(
                    _INSERT_REPORT,
                    (
                        report.kind,
                        report.created_at,
                        _json(report.baseline),
                        _json(report.candidate),
                        _json(report.summary),
                        _json(report.per_run),
                    ),
                ).fetchone()
                assert row is not None
                report_id = int(row[0])
                with conn.cursor() as cur:
                    cur.executemany(
                        _INSERT_CASE,
                        [
                            (report_id, c.case_id, c.passed, _json(c.reasons), _json(c.run))
                            for c in report.cases
                        ],
                    )
    except psycopg.OperationalError as exc:
        raise TransientError(f"cannot store the report in PostgreSQL: {exc}") from exc
    report.report_id = report_id
    return report_id


def load_report(report_id: int, settings: PostgresSettings | None = None) -> dict[str, Any]:
    """A stored report with its case rows (for tests and later comparisons)."""
    settings = settings or PostgresSettings()
    with psycopg.connect(settings.dsn.get_secret_value(), autocommit=True) as conn:
        row = conn.execute(
            "SELECT kind, baseline, candidate, summary, per_run FROM eval_report WHERE id = %s",
            (report_id,),
        ).fetchone()
        if row is None:
            raise KeyError(report_id)
        cases = conn.execute(
            "SELECT case_id, passed, reasons, run FROM eval_case_result"
            " WHERE report_id = %s ORDER BY case_id",
            (report_id,),
        ).fetchall()
    kind, baseline, candidate, summary, per_run = row
    return {
        "id": report_id,
        "kind": kind,
        "baseline": baseline,
        "candidate": candidate,
        "summary": summary,
        "per_run": per_run,
        "cases": [{"case_id": c[0], "passed": c[1], "reasons": c[2], "run": c[3]} for c in cases],
    }
