"""FULL_TRANSITIVE schema compatibility, checked with Apache Avro's own checker.

A new version must be able to read data written with every earlier version
(backward) and every earlier version must be able to read data written with the
new one (forward): old topics are replayed by new code, and old replicas may
still read new events during a rolling upgrade.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tracebound.codec import schemas
from tracebound.errors import ConfigError
from tracebound.events import EVENT_TYPES


@dataclass(frozen=True, slots=True)
class Incompatibility:
    event: str
    against_version: int
    direction: str  # "backward" (new reads old) or "forward" (old reads new)
    detail: str


def _compatible(reader: dict[str, Any], writer: dict[str, Any]) -> tuple[bool, str]:
    try:
        import avro.schema  # noqa: PLC0415 - a development dependency
        from avro.compatibility import (  # noqa: PLC0415
            ReaderWriterCompatibilityChecker,
            SchemaCompatibilityType,
        )
    except ImportError as exc:
        raise ConfigError("schema checks need the 'avro' package (pip install avro)") from exc
    checker = ReaderWriterCompatibilityChecker()  # type: ignore[no-untyped-call]
    result = checker.get_compatibility(
        avro.schema.parse(json.dumps(reader)), avro.schema.parse(json.dumps(writer))
    )
    if result.compatibility is SchemaCompatibilityType.compatible:
        return True, ""
    return False, "; ".join(sorted(str(m) for m in result.messages)) or "incompatible"


def check_full_transitive(
    candidate: dict[str, Any], previous: list[tuple[int, dict[str, Any]]], event: str
) -> list[Incompatibility]:
    """Every way ``candidate`` breaks FULL_TRANSITIVE against ``previous`` versions."""
    problems: list[Incompatibility] = []
    for number, old in previous:
        ok, detail = _compatible(reader=candidate, writer=old)
        if not ok:
            problems.append(Incompatibility(event, number, "backward", detail))
        ok, detail = _compatible(reader=old, writer=candidate)
        if not ok:
            problems.append(Incompatibility(event, number, "forward", detail))
    return problems


def check_working_copy() -> list[Incompatibility]:
    """Check every event's schema in ``schemas/`` against all its frozen versions."""
    problems: list[Incompatibility] = []
    for event in EVENT_TYPES:
        past = [(v.version or 0, v.expanded) for v in schemas.history(event)]
        problems.extend(check_full_transitive(schemas.current(event).expanded, past, event))
    return problems
