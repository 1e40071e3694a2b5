"""Confluent wire format (magic byte 0 + 4-byte schema id + Avro body).

Used when a schema registry URL is configured, so tracebound topics can be read by
any tool of the Confluent ecosystem (Schema Registry, Apicurio ccompat, Karapace).
Schemas are registered under the topic-name strategy (``<topic>-value``) through
``confluent_kafka.schema_registry``; readers resolve the writer schema by id.
"""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Callable
from typing import Any

from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from fastavro import schemaless_reader, schemaless_writer

from tracebound.codec import fastpath, schemas
from tracebound.codec.documents import EventDoc, to_doc
from tracebound.codec.heads import EventHead, head_schema, read_head
from tracebound.errors import DecodeError, TransientError, UnknownSchemaError
from tracebound.events import EVENT_TYPES, Event

MAGIC = 0
HEADER_LEN = 5


class ConfluentCodec:
    """Registers writer schemas on first use and frames values the Confluent way."""

    def __init__(self, url: str, basic_auth: str | None = None) -> None:
        conf: dict[str, Any] = {"url": url}
        if basic_auth:
            conf["basic.auth.user.info"] = basic_auth
        self._client = SchemaRegistryClient(conf)
        self._ids: dict[tuple[str, str], int] = {}
        self._writers: dict[int, tuple[str, Any]] = {}
        self._heads: dict[int, tuple[str, Any]] = {}
        self._lock = threading.Lock()

    def _schema_id(self, subject: str, event: str) -> int:
        key = (subject, event)
        with self._lock:
            cached = self._ids.get(key)
        if cached is not None:
            return cached
        text = json.dumps(schemas.current(event).expanded)
        try:
            schema_id = int(self._client.register_schema(subject, Schema(text, "AVRO")))
        except Exception as exc:
            raise TransientError(f"schema registry refused {subject}: {exc}") from exc
        with self._lock:
            self._ids[key] = schema_id
        return schema_id

    def encode(self, event: Event, topic: str | None = None) -> bytes:
        subject = f"{topic or event.topic}-value"
        schema_id = self._schema_id(subject, event.schema_name)
        buf = io.BytesIO()
        buf.write(bytes([MAGIC]))
        buf.write(schema_id.to_bytes(4, "big"))
        schemaless_writer(buf, schemas.current(event.schema_name).parsed, fastpath.to_record(event))
        return buf.getvalue()

    def _writer(self, schema_id: int) -> tuple[str, Any]:
        return self._schema(self._writers, schema_id, schemas.parse)

    def _head(self, schema_id: int) -> tuple[str, Any]:
        return self._schema(self._heads, schema_id, head_schema)

    def _schema(
        self, made: dict[int, tuple[str, Any]], schema_id: int, make: Callable[[Any], Any]
    ) -> tuple[str, Any]:
        """(event, ``make`` of the registered schema ``schema_id``), made once into ``made``."""
        with self._lock:
            hit = made.get(schema_id)
        if hit is not None:
            return hit
        name, raw = self._registered(schema_id)
        entry = (name, make(raw))
        with self._lock:
            made[schema_id] = entry
        return entry

    def _registered(self, schema_id: int) -> tuple[str, dict[str, Any]]:
        """The event name and schema text the registry holds under ``schema_id``."""
        try:
            schema = self._client.get_schema(schema_id)
        except Exception as exc:
            raise UnknownSchemaError(f"schema id {schema_id} not in the registry: {exc}") from exc
        raw = json.loads(schema.schema_str or "{}")
        name = str(raw.get("name", "")).rsplit(".", 1)[-1]
        if name not in EVENT_TYPES:
            raise UnknownSchemaError(f"schema id {schema_id} is {name!r}, not a tracebound event")
        return name, raw

    def decode(self, data: bytes | None, topic: str | None = None) -> Event:
        del topic
        return fastpath.to_event(*self._read(data))

    def decode_doc(self, data: bytes | None, topic: str | None = None) -> EventDoc:
        """The event as a JSON document (:mod:`tracebound.codec.documents`), no model built."""
        del topic
        return to_doc(*self._read(data))

    def decode_head(self, data: bytes | None, topic: str | None = None) -> EventHead:
        """The event's envelope alone (:mod:`tracebound.codec.heads`), its body unread."""
        del topic
        value = _framed(data)
        return read_head(*self._head(int.from_bytes(value[1:HEADER_LEN], "big")), value, HEADER_LEN)

    def _read(self, data: bytes | None) -> tuple[str, dict[str, Any]]:
        data = _framed(data)
        event, writer = self._writer(int.from_bytes(data[1:HEADER_LEN], "big"))
        buf = io.BytesIO(data)
        buf.seek(HEADER_LEN)
        try:
            record = schemaless_reader(buf, writer, schemas.current(event).parsed)
        except Exception as exc:
            raise DecodeError(f"corrupt {event} body: {type(exc).__name__}: {exc}") from exc
        if not isinstance(record, dict):
            raise DecodeError(f"{event} body is not a record")
        return event, record


def _framed(data: bytes | None) -> bytes:
    """``data`` if it is framed the Confluent way; DecodeError otherwise."""
    if not data or len(data) < HEADER_LEN or data[0] != MAGIC:
        raise DecodeError("not a Confluent-framed Avro message (missing magic byte 0)")
    return data
