"""Event codecs: Avro single-object encoding by default, Confluent framing with a registry."""

from __future__ import annotations

from typing import Protocol

from tracebound.codec.single_object import SingleObjectCodec
from tracebound.events import Event
from tracebound.settings import KafkaSettings


class Codec(Protocol):
    def encode(self, event: Event, topic: str | None = None) -> bytes: ...

    def decode(self, data: bytes | None, topic: str | None = None) -> Event: ...


def make_codec(settings: KafkaSettings) -> Codec:
    """The codec the settings ask for: a registry URL switches to the Confluent format."""
    if settings.schema_registry_url:
        from tracebound.codec.confluent import ConfluentCodec  # noqa: PLC0415 - optional path

        auth = settings.schema_registry_basic_auth
        return ConfluentCodec(
            settings.schema_registry_url, auth.get_secret_value() if auth else None
        )
    return SingleObjectCodec()


__all__ = ["Codec", "SingleObjectCodec", "make_codec"]
