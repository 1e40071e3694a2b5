"""SQL migrations: numbered files in ``projections/migrations``, applied in order.

Each applied file is recorded in ``tb_schema_migrations`` with a checksum of its
text. A file that changed after it was applied is a configuration error rather
than something to re-run: the database already holds what the old text made, and
only a new numbered migration can change it. Runs are idempotent and serialised
by an advisory lock per schema, so several processes may start at once.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from tracebound.errors import ConfigError

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str
    checksum: str


def load_migrations(folder: Path = MIGRATIONS_DIR) -> list[Migration]:
    found: list[Migration] = []
    for path in sorted(folder.glob("*.sql")):
        match = _NAME.match(path.name)
        if match is None:
            raise ConfigError(f"migration file {path.name} is not named NNNN_name.sql")
        raw = path.read_bytes()
        found.append(
            Migration(
                version=int(match.group(1)),
                name=match.group(2),
                sql=raw.decode("utf-8"),
                checksum=hashlib.sha256(raw).hexdigest(),
            )
        )
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise ConfigError(f"two migration files share a version number in {folder}")
    return found


def migrate(conn: psycopg.Connection[Any], folder: Path = MIGRATIONS_DIR) -> list[str]:
    """Apply every pending migration in one transaction; returns the names applied."""
    migrations = load_migrations(folder)
    applied_now: list[str] = []
    with conn.transaction():
        conn.execute(
            "SELECT pg_advisory_xact_lock(hashtext(coalesce(current_schema(), '') || %s))",
            (".tb_schema_migrations",),
        )
        conn.execute(
            "CREATE TABLE IF NOT EXISTS tb_schema_migrations ("
            " version integer PRIMARY KEY,"
            " name text NOT NULL,"
            " applied_at timestamptz NOT NULL DEFAULT now(),"
            " checksum text NOT NULL)"
        )
        rows = conn.execute("SELECT version, name, checksum FROM tb_schema_migrations").fetchall()
        applied = {int(r[0]): (str(r[1]), str(r[2])) for r in rows}
        for m in migrations:
            if m.version in applied:
                name, checksum = applied[m.version]
                if checksum != m.checksum:
                    raise ConfigError(
                        f"migration {m.version:04d}_{name} changed after it was applied; "
                        "add a new migration instead of editing an applied one"
                    )
                continue
            conn.execute(m.sql.encode("utf-8"))
            conn.execute(
                "INSERT INTO tb_schema_migrations (version, name, checksum) VALUES (%s, %s, %s)",
                (m.version, m.name, m.checksum),
            )
            applied_now.append(f"{m.version:04d}_{m.name}")
    return applied_now
