"""An event's envelope read alone: the fields every event schema starts with.

Every event schema, current and frozen, begins with the same six fields
(``event_id``, ``run_id``, ``occurred_at``, ``producer``, ``causation_id``,
``session_id``). Avro writes fields in schema order with nothing between them, so
reading a value with a writer schema cut after those six reads exactly them and
stops: the body behind them, often kilobytes of evidence, is not decoded at all. A
reader that needs only to know *which* run progressed and *when*, such as the
sentinel, pays a few microseconds per event instead of the full decode.

A head is not a validated event: the body is not read, so a corrupt or invalid
body goes unnoticed here (the roles that consume the event dead-letter it).
"""

from __future__ import annotations

import io
from datetime import datetime
from typing import Any, NamedTuple

from fastavro import schemaless_reader

from tracebound.codec.schemas import parse
from tracebound.errors import DecodeError

ENVELOPE = ("event_id", "run_id", "occurred_at", "producer", "causation_id", "session_id")


class EventHead(NamedTuple):
    """The envelope of one event, and the name of its schema."""

    name: str
    run_id: str
    occurred_at: datetime
    session_id: str | None
    producer: str  # the service that wrote it


def head_schema(expanded: dict[str, Any]) -> Any:
    """The parsed writer schema of the envelope of ``expanded`` (a record schema with its
    named types inline); DecodeError if the schema does not start with the envelope."""
    fields = expanded.get("fields")
    head = fields[: len(ENVELOPE)] if isinstance(fields, list) else []
    if tuple(f.get("name") for f in head) != ENVELOPE:
        raise DecodeError(f"schema {expanded.get('name')!r} does not start with the envelope")
    return parse({**expanded, "fields": head})


def read_head(name: str, schema: Any, data: bytes, offset: int) -> EventHead:
    """The head of the value ``data`` whose body starts at ``offset``, read with ``schema``
    (from :func:`head_schema`)."""
    buf = io.BytesIO(data)
    buf.seek(offset)
    try:
        record: Any = schemaless_reader(buf, schema, None)
        return EventHead(
            name,
            record["run_id"],
            record["occurred_at"],
            record["session_id"],
            record["producer"]["service"],
        )
    except Exception as exc:  # fastavro raises many types on corrupt input
        raise DecodeError(f"corrupt {name} envelope: {type(exc).__name__}: {exc}") from exc
