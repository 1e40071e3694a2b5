"""An event's envelope read alone gives what the whole event says of it, in either format."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from tests.support.samples import sample
from tracebound.codec import SingleObjectCodec, schemas
from tracebound.codec.confluent import ConfluentCodec
from tracebound.codec.heads import ENVELOPE, EventHead, head_schema
from tracebound.errors import DecodeError, UnknownSchemaError
from tracebound.events import EVENT_TYPES, Event


def _head_of(event: Event) -> EventHead:
    return EventHead(
        event.schema_name, event.run_id, event.occurred_at, event.session_id, event.producer.service
    )


@pytest.mark.parametrize("name", sorted(EVENT_TYPES))
def test_the_head_of_every_event_is_its_envelope(name: str) -> None:
    event = sample(EVENT_TYPES[name]).model_copy(update={"session_id": "s-1"})
    assert SingleObjectCodec().decode_head(SingleObjectCodec().encode(event)) == _head_of(event)


def test_every_schema_version_starts_with_the_envelope() -> None:
    for version in schemas.all_versions().values():
        assert head_schema(version.expanded) is not None, version.event


def test_a_schema_without_the_envelope_has_no_head() -> None:
    fields = [{"name": n, "type": "string"} for n in reversed(ENVELOPE)]
    with pytest.raises(DecodeError, match="envelope"):
        head_schema({"type": "record", "name": "Other", "fields": fields})


def test_unreadable_heads_raise_decode_errors() -> None:
    codec = SingleObjectCodec()
    value = codec.encode(sample(EVENT_TYPES["Verdict"]))
    with pytest.raises(DecodeError, match="single-object"):
        codec.decode_head(b"\x00" + value[1:])
    with pytest.raises(UnknownSchemaError):
        codec.decode_head(value[:2] + b"\xff" * 8 + value[10:])
    with pytest.raises(DecodeError, match="corrupt Verdict envelope"):
        codec.decode_head(value[:12])


@dataclass
class _Registered:
    schema_str: str


class _Registry:
    """The two calls the codec makes of a schema registry, kept in memory."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def register_schema(self, subject: str, schema: Any) -> int:
        del subject
        self.texts.append(schema.schema_str)
        return len(self.texts)

    def get_schema(self, schema_id: int) -> _Registered:
        return _Registered(self.texts[schema_id - 1])


def test_the_confluent_format_reads_heads_by_schema_id() -> None:
    codec = ConfluentCodec("http://127.0.0.1:1")
    codec._client = _Registry()  # type: ignore[assignment]
    event = sample(EVENT_TYPES["GatekeeperResult"])
    value = codec.encode(event, "tracebound.gatekeeper-results")
    assert codec.decode_head(value) == _head_of(event)
    assert codec.decode(value) == event
