"""Event codecs: Avro single-object encoding by default, Confluent framing with a registry."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from tracebound.codec.documents import EventDoc
from tracebound.codec.heads import EventHead
from tracebound.codec.single_object import SingleObjectCodec
from tracebound.codec.views import DOCUMENT, EVENT, HEAD, EventReader, View, read
from tracebound.events import Event
from tracebound.settings import KafkaSettings

if TYPE_CHECKING:
    from tracebound.codec.confluent import ConfluentCodec


class Codec(Protocol):
    def encode(self, event: Event, topic: str | None = None) -> bytes: ...

    def decode(self, data: bytes | None, topic: str | None = None) -> Event: ...


class DocDecoder(Protocol):
    def decode_doc(self, data: bytes | None, topic: str | None = None) -> EventDoc: ...


class EventCodec(Codec, EventReader, Protocol):
    """A codec that reads every view of an event (:mod:`tracebound.codec.views`)."""


def make_codec(settings: KafkaSettings) -> EventCodec:
    """The codec the settings ask for: a registry URL switches to the Confluent format.

    It writes events and reads each view of them: the whole event, its JSON
    document, its envelope alone.
    """
    return _codec(settings)


def _codec(settings: KafkaSettings) -> SingleObjectCodec | ConfluentCodec:
    if settings.schema_registry_url:
        from tracebound.codec.confluent import ConfluentCodec  # noqa: PLC0415 - optional path

        auth = settings.schema_registry_basic_auth
        return ConfluentCodec(
            settings.schema_registry_url, auth.get_secret_value() if auth else None
        )
    return SingleObjectCodec()


__all__ = [
    "DOCUMENT",
    "EVENT",
    "HEAD",
    "Codec",
    "DocDecoder",
    "EventCodec",
    "EventDoc",
    "EventHead",
    "EventReader",
    "SingleObjectCodec",
    "View",
    "make_codec",
    "read",
]
