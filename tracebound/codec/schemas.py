"""Loads the Avro schemas of ``schemas/`` and their frozen history; exports them.

Each event schema may reference shared named records kept in their own files
(``schemas/tracebound.<Name>.avsc``); fastavro expands those references, so every
event has one self-contained *expanded* schema. Released versions of each expanded
schema are frozen under ``schemas/history/<Event>/v<N>.avsc``: old topics are
replayed, so the codec must still read every version ever written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from fastavro import parse_schema
from fastavro.schema import load_schema, to_parsing_canonical_form

from tracebound.errors import ConfigError
from tracebound.events import EVENT_TYPES
from tracebound.topics import SCHEMA_DIR

NAMESPACE = "tracebound"
HISTORY_DIR = SCHEMA_DIR / "history"

_EMPTY64 = 0xC15D213AA4D7A795


def _crc64_table() -> tuple[int, ...]:
    table = []
    for i in range(256):
        fp = i
        for _ in range(8):
            fp = (fp >> 1) ^ (_EMPTY64 & -(fp & 1))
        table.append(fp)
    return tuple(table)


_TABLE = _crc64_table()


def crc64_avro(data: bytes) -> int:
    """The CRC-64-AVRO (Rabin) fingerprint of the Avro specification."""
    fp = _EMPTY64
    for byte in data:
        fp = (fp >> 8) ^ _TABLE[(fp ^ byte) & 0xFF]
    return fp


@dataclass(frozen=True, slots=True)
class SchemaVersion:
    """One version of one event schema, ready for fastavro."""

    event: str
    version: int | None  # None: the working copy in schemas/, not (yet) frozen
    expanded: dict[str, Any]
    parsed: Any
    canonical: str
    fingerprint: bytes  # 8 bytes, little-endian, as in single-object encoding


def plain_uuids(schema: Any) -> Any:
    """``schema`` with ``uuid`` logical types read as plain strings.

    The models keep ids as strings; letting fastavro build ``uuid.UUID`` objects only
    to turn them back into strings cost a tenth of every decode. Logical types are not
    part of the parsing canonical form, so fingerprints are unchanged.
    """
    if isinstance(schema, dict):
        if schema.get("logicalType") == "uuid":
            return "string"
        return {k: plain_uuids(v) for k, v in schema.items()}
    if isinstance(schema, list):
        return [plain_uuids(v) for v in schema]
    return schema


def parse(expanded: dict[str, Any]) -> Any:
    """``expanded`` parsed for fastavro as every reader and writer here uses it."""
    return parse_schema(plain_uuids(expanded))


def _version(event: str, version: int | None, expanded: dict[str, Any]) -> SchemaVersion:
    canonical = to_parsing_canonical_form(expanded)
    fp = crc64_avro(canonical.encode("utf-8")).to_bytes(8, "little")
    return SchemaVersion(event, version, expanded, parse(expanded), canonical, fp)


def schema_path(event: str) -> Path:
    return SCHEMA_DIR / f"{NAMESPACE}.{event}.avsc"


@cache
def current(event: str) -> SchemaVersion:
    """The expanded working-copy schema of ``event``: the reader schema of the codec."""
    path = schema_path(event)
    try:
        expanded = load_schema(str(path), _write_hint=False)
    except (OSError, ValueError, KeyError) as exc:
        raise ConfigError(f"Avro schema {path} cannot be loaded: {exc}") from exc
    if not isinstance(expanded, dict):
        raise ConfigError(f"Avro schema {path} is not a record schema")
    return _version(event, None, expanded)


def history(event: str) -> list[SchemaVersion]:
    """Every frozen version of ``event``, oldest first."""
    folder = HISTORY_DIR / event
    versions: list[SchemaVersion] = []
    for path in sorted(folder.glob("v*.avsc"), key=lambda p: int(p.stem[1:])):
        try:
            expanded = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"frozen schema {path} is unreadable: {exc}") from exc
        versions.append(_version(event, int(path.stem[1:]), expanded))
    return versions


@cache
def all_versions() -> dict[bytes, SchemaVersion]:
    """Fingerprint → schema, for every event, current and frozen."""
    table: dict[bytes, SchemaVersion] = {}
    for event in EVENT_TYPES:
        for version in [*history(event), current(event)]:
            table.setdefault(version.fingerprint, version)
    return table


def export(folder: Path) -> list[tuple[Path, SchemaVersion]]:
    """Write each event's current schema as one self-contained ``.avsc`` into ``folder``.

    Consumers in other languages need no dependency order: every named type is
    defined inline at its first use and referred to by full name afterwards, as the
    Avro specification requires, so Apache Avro's ``Schema.Parser`` reads each file
    alone. Its parsing canonical form is the one the codec fingerprints, so the
    file's CRC-64-AVRO fingerprint is the one in the single-object header.
    """
    folder.mkdir(parents=True, exist_ok=True)
    written: list[tuple[Path, SchemaVersion]] = []
    for event in EVENT_TYPES:
        version = current(event)
        target = folder / f"{NAMESPACE}.{event}.avsc"
        text = json.dumps(version.expanded, indent=2, ensure_ascii=False) + "\n"
        target.write_text(text, encoding="utf-8")
        written.append((target, version))
    return written


def freeze(event: str) -> SchemaVersion | None:
    """Record the working copy as a new frozen version if it changed; return it."""
    cur = current(event)
    past = history(event)
    if past and past[-1].canonical == cur.canonical:
        return None
    number = (past[-1].version or 0) + 1 if past else 1
    folder = HISTORY_DIR / event
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"v{number}.avsc"
    target.write_text(json.dumps(cur.expanded, indent=2, ensure_ascii=False) + "\n", "utf-8")
    return _version(event, number, cur.expanded)
