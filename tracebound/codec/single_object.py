"""Avro single-object encoding: ``C3 01`` + 8-byte CRC-64-AVRO fingerprint + body.

Needs no schema server: the writer schema is found by fingerprint among the
schemas shipped in ``schemas/`` (current and frozen), and resolved against the
current reader schema, so events written by older versions stay readable.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from functools import cache
from typing import Any

from fastavro import schemaless_reader, schemaless_writer

from tracebound.codec import fastpath, schemas
from tracebound.codec.documents import EventDoc, to_doc
from tracebound.codec.heads import EventHead, head_schema, read_head
from tracebound.errors import DecodeError, UnknownSchemaError
from tracebound.events import Event

MAGIC = b"\xc3\x01"
HEADER_LEN = 10


@cache
def _readers() -> dict[bytes, tuple[str, Any, Any]]:
    """Fingerprint → (event, writer schema, reader schema or None when it is the writer's)."""
    readers = {}
    for fingerprint, writer in schemas.all_versions().items():
        reader = schemas.current(writer.event)
        same = writer.canonical == reader.canonical
        readers[fingerprint] = (writer.event, writer.parsed, None if same else reader.parsed)
    return readers


@cache
def _head_readers() -> dict[bytes, tuple[str, Any]]:
    """Fingerprint → (event, writer schema of its envelope)."""
    return {fp: (v.event, head_schema(v.expanded)) for fp, v in schemas.all_versions().items()}


class SingleObjectCodec:
    """Encodes events as Avro single objects; decodes any known writer version."""

    def encode(self, event: Event, topic: str | None = None) -> bytes:
        del topic  # the header names the schema, not the topic
        version = schemas.current(event.schema_name)
        buf = io.BytesIO()
        buf.write(MAGIC)
        buf.write(version.fingerprint)
        schemaless_writer(buf, version.parsed, fastpath.to_record(event))
        return buf.getvalue()

    def decode(self, data: bytes | None, topic: str | None = None) -> Event:
        del topic  # the fingerprint alone names the schema
        return fastpath.to_event(*_read(data))

    def decode_doc(self, data: bytes | None, topic: str | None = None) -> EventDoc:
        """The event as a JSON document (:mod:`tracebound.codec.documents`), no model built."""
        del topic
        return to_doc(*_read(data))

    def decode_head(self, data: bytes | None, topic: str | None = None) -> EventHead:
        """The event's envelope alone (:mod:`tracebound.codec.heads`), its body unread."""
        del topic
        value = _framed(data)
        head = _head_readers().get(value[2:HEADER_LEN])
        if head is None:
            raise UnknownSchemaError(f"unknown schema fingerprint {value[2:HEADER_LEN].hex()}")
        return read_head(*head, value, HEADER_LEN)


def _read(data: bytes | None) -> tuple[str, dict[str, Any]]:
    read = read_record(data, _readers())
    if read is None:  # every known fingerprint has a reader here
        raise UnknownSchemaError("no reader for a known schema fingerprint")
    return read


Readers = Mapping[bytes, tuple[str, Any, Any]]


def read_record(data: bytes | None, readers: Readers) -> tuple[str, dict[str, Any]] | None:
    """The event name and Avro record of one single-object message.

    ``readers`` maps a writer fingerprint to (event, writer schema, reader schema or
    None); a fingerprint of a known schema missing from it gives None (an event the
    caller does not read). Anything unreadable raises :class:`DecodeError`.
    """
    data = _framed(data)
    fingerprint = data[2:HEADER_LEN]
    resolved = readers.get(fingerprint)
    if resolved is None:
        if fingerprint in schemas.all_versions():
            return None
        raise UnknownSchemaError(f"unknown schema fingerprint {fingerprint.hex()}")
    event, writer, reader = resolved
    buf = io.BytesIO(data)
    buf.seek(HEADER_LEN)
    try:
        record = schemaless_reader(buf, writer, reader)
    except Exception as exc:  # fastavro raises many types on corrupt input
        raise DecodeError(f"corrupt {event} body: {type(exc).__name__}: {exc}") from exc
    if buf.tell() != len(data):
        raise DecodeError(f"{len(data) - buf.tell()} trailing bytes after {event} body")
    if not isinstance(record, dict):
        raise DecodeError(f"{event} body is not a record")
    return event, record


def _framed(data: bytes | None) -> bytes:
    """``data`` if it is framed as a single object; DecodeError otherwise."""
    if not data or len(data) < HEADER_LEN or data[:2] != MAGIC:
        raise DecodeError("not an Avro single-object message (missing C3 01 header)")
    return data
