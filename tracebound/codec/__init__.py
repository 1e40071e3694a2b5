"""Event codecs: Avro single-object encoding by default, Confluent framing with a registry."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from tracebound.codec.documents import EventDoc
from tracebound.codec.heads import EventHead
from tracebound.codec.single_object import SingleObjectCodec
from tracebound.events import Event
from tracebound.settings import KafkaSettings

if TYPE_CHECKING:
    from tracebound.codec.confluent import ConfluentCodec


class Codec(Protocol):
    def encode(self, event: Event, topic: str | None = None) -> bytes: ...

    def decode(self, data: bytes | None, topic: str | None = None) -> Event: ...


class DocDecoder(Protocol):
    def decode_doc(self, data: bytes | None, topic: str | None = None) -> EventDoc: ...


class HeadCodec(Codec, Protocol):
    """A codec that also reads an event's envelope alone (:mod:`tracebound.codec.heads`)."""

    def decode_head(self, data: bytes | None, topic: str | None = None) -> EventHead: ...


def make_codec(settings: KafkaSettings) -> Codec:
    """The codec the settings ask for: a registry URL switches to the Confluent format."""
    return _codec(settings)


def make_doc_decoder(settings: KafkaSettings) -> DocDecoder:
    """What reads events as documents (:mod:`tracebound.codec.documents`) in that format."""
    return _codec(settings)


def make_head_codec(settings: KafkaSettings) -> HeadCodec:
    """The codec of :func:`make_codec`, typed as also reading envelopes alone."""
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
    "Codec",
    "DocDecoder",
    "EventDoc",
    "EventHead",
    "HeadCodec",
    "SingleObjectCodec",
    "make_codec",
    "make_doc_decoder",
    "make_head_codec",
]
