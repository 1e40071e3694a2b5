"""Base classes shared by every event model.

Models are frozen pydantic classes that mirror the Avro schemas in ``schemas/``
field by field (a contract test enforces it). Fields whose Avro type is a JSON
string (marked ``"tracebound.json": true`` in the schema) hold parsed JSON in
Python and are dumped to text only when the codec asks for the Avro form.
"""

from __future__ import annotations

import os
import re
import uuid
from datetime import UTC, datetime
from typing import Annotated, Any, ClassVar, Self, TypeVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    SerializationInfo,
    ValidationInfo,
)
from pydantic.fields import FieldInfo

from tracebound import __version__, fastjson

AVRO_CONTEXT: dict[str, bool] = {"avro": True}
# What a run id given in a URL or on a command line may look like.
RUN_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")
EventT = TypeVar("EventT", bound="Event")


def _avro(info: ValidationInfo | SerializationInfo) -> bool:
    ctx = info.context
    return bool(ctx and ctx.get("avro"))


def _load_json(value: Any, info: ValidationInfo) -> Any:
    if _avro(info) and isinstance(value, str):
        return fastjson.loads(value)
    return value


def _dump_json(value: Any, info: SerializationInfo) -> Any:
    if _avro(info) and value is not None:
        return fastjson.dumps(value)
    return value


_JSON_TEXT = (BeforeValidator(_load_json), PlainSerializer(_dump_json))
JsonValue = Annotated[Any, *_JSON_TEXT]
"""Parsed JSON in Python; JSON text on the wire."""


def is_json_field(field: FieldInfo) -> bool:
    """Whether ``field`` is a :data:`JsonValue` (and carries no other metadata)."""
    return tuple(field.metadata) == _JSON_TEXT


class Record(BaseModel):
    """An immutable Avro record."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class Producer(Record):
    service: str
    version: str = __version__


def new_event_id() -> str:
    """A random (version 4) UUID as text, without building a ``uuid.UUID`` on the way."""
    raw = bytearray(os.urandom(16))
    raw[6] = raw[6] & 0x0F | 0x40
    raw[8] = raw[8] & 0x3F | 0x80
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def utcnow() -> datetime:
    """Now, truncated to the millisecond precision of Avro ``timestamp-millis``."""
    now = datetime.now(UTC)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


class Event(Record):
    """Envelope fields every event carries; subclasses add the payload."""

    schema_name: ClassVar[str]
    topic: ClassVar[str]

    event_id: str = Field(default_factory=new_event_id)
    run_id: str
    occurred_at: datetime = Field(default_factory=utcnow)
    producer: Producer
    causation_id: str | None = None
    session_id: str | None = None

    def to_avro(self) -> dict[str, Any]:
        """The dict fastavro writes: JSON fields as text, uuid as str."""
        return self.model_dump(mode="python", context=AVRO_CONTEXT)

    @classmethod
    def from_avro(cls, record: dict[str, Any]) -> Self:
        data = dict(record)
        if isinstance(data.get("event_id"), uuid.UUID):
            data["event_id"] = str(data["event_id"])
        return cls.model_validate(data, context=AVRO_CONTEXT)

    def to_json(self) -> dict[str, Any]:
        """Plain JSON-ready dict (JSON fields stay structured) for CLIs and APIs."""
        return self.model_dump(mode="json")

    def reply(self, cls: type[EventT], service: str, **payload: Any) -> EventT:
        """A new event caused by this one: same run and session, causation set."""
        return cls(
            run_id=self.run_id,
            session_id=self.session_id,
            causation_id=self.event_id,
            producer=Producer(service=service),
            **payload,
        )
