"""What the ingest accepts, as pydantic models: Alertmanager webhooks and chat questions.

The same models validate HTTP bodies and ``tracebound publish`` files, and their
JSON schemas are in the OpenAPI document, so what is documented is what is checked.
Alertmanager payloads ignore unknown fields (newer Alertmanager versions add
some); the chat body is ours and rejects them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    StringConstraints,
    ValidationError,
    field_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, core_schema

from tracebound.bounds import LABEL_CHARS, TEXT_CHARS, cut_text
from tracebound.rfc3339 import EARLIEST, LATEST, ZERO_TIME, in_window

# RFC 3339 as Alertmanager writes it (nanosecond fractions included; Python's
# datetime cannot hold those, so the text is kept and only its shape is checked).
RFC3339 = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$"
_RFC3339 = re.compile(RFC3339, re.ASCII)
_FRACTION = re.compile(r"(\.\d{1,6})\d*")
MAX_ALERTS = 1000
MAX_QUESTION_CHARS = 4000
# Per-field sizes in characters: a longer value is cut to its size and marked, so a
# large alert is still accepted and every event that carries it stays small.
MAX_ANNOTATION_CHARS = TEXT_CHARS
MAX_LABEL_CHARS = LABEL_CHARS
MAX_NAME_CHARS = 1024
MAX_URL_CHARS = 4096
MAX_GROUP_KEY_CHARS = 4096
MAX_RECEIVER_CHARS = 256
# C0 control characters other than tab, line feed and carriage return.
NO_CONTROLS = "^[^\\x00-\\x08\\x0b\\x0c\\x0e-\\x1f]*$"
_CONTROL_CODES = frozenset(range(0x20)) - {0x09, 0x0A, 0x0D}


def control_character(text: str) -> str | None:
    """The first C0 control character of ``text`` as ``U+00XX`` (tab, LF, CR allowed)."""
    for char in text:
        if ord(char) in _CONTROL_CODES:
            return f"U+{ord(char):04X}"
    return None


class Printable:
    """Refuses NUL and the other C0 controls: PostgreSQL and the pages cannot carry them."""

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        return core_schema.no_info_after_validator_function(self._check, handler(source))

    def __get_pydantic_json_schema__(
        self, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        value = handler(schema)
        value["pattern"] = NO_CONTROLS
        return value

    @staticmethod
    def _check(text: str) -> str:
        found = control_character(text)
        if found is not None:
            raise ValueError(f"control character {found} is not allowed")
        return text


@dataclass(frozen=True, slots=True)
class Cut:
    """Cuts a longer value to ``size`` characters and says how much was left out."""

    size: int

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        return core_schema.no_info_after_validator_function(self.cut, handler(source))

    def __get_pydantic_json_schema__(
        self, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        value = handler(schema)
        note = f"a longer value is cut to {self.size} characters, ending in a [cut: …] marker"
        value["description"] = f"{value['description']}; {note}" if "description" in value else note
        return value

    def cut(self, text: str) -> str:
        """``text`` when it fits, else its start and the marker, ``size`` characters in all."""
        return cut_text(text, self.size)


def _timestamp(text: str) -> str:
    """An RFC 3339 time from 1970 to 2200 (UTC); ``""`` and Go's zero time mean unset."""
    if text in ("", ZERO_TIME):
        return ""
    if not _RFC3339.fullmatch(text):
        raise ValueError("not an RFC 3339 date and time")
    try:  # at most six fraction digits for Python; the text itself is kept whole
        moment = datetime.fromisoformat(_FRACTION.sub(r"\1", text).replace("Z", "+00:00"))
    except ValueError:
        raise ValueError("not an RFC 3339 date and time") from None
    if not in_window(moment):
        raise ValueError(
            f"must lie from {EARLIEST:%Y-%m-%d} to {LATEST:%Y-%m-%d} UTC ({ZERO_TIME} means unset)"
        )
    return text


class _Window:
    """:func:`_timestamp` as a validator, and its rule in the JSON schema."""

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        return core_schema.no_info_after_validator_function(_timestamp, handler(source))

    def __get_pydantic_json_schema__(
        self, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        value = handler(schema)
        value["pattern"] = f"^$|{RFC3339}"
        value["description"] = (
            f"RFC 3339 from {EARLIEST:%Y-%m-%d} to {LATEST:%Y-%m-%d} UTC;"
            f" empty or {ZERO_TIME} means unset"
        )
        return value


class _Names:
    """A mapping whose keys have a pattern: the pattern stays a rule on the names.

    pydantic turns a key pattern into ``patternProperties``, which would leave
    other names unchecked; here the names get ``propertyNames.pattern``.
    """

    def __get_pydantic_json_schema__(
        self, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        value = handler(schema)
        patterns = value.pop("patternProperties", {})
        for pattern, values in patterns.items():
            value.setdefault("propertyNames", {})["pattern"] = pattern
            value["additionalProperties"] = values
        return value


Text = Annotated[str, Printable()]
Timestamp = Annotated[str, _Window()]
LabelName = Annotated[str, StringConstraints(min_length=1, max_length=MAX_NAME_CHARS), Printable()]
AnnotationName = Annotated[str, StringConstraints(max_length=MAX_NAME_CHARS), Printable()]
LabelValue = Annotated[str, Printable(), Cut(MAX_LABEL_CHARS)]
AnnotationValue = Annotated[str, Printable(), Cut(MAX_ANNOTATION_CHARS)]
Labels = Annotated[dict[LabelName, LabelValue], _Names()]
Annotations = Annotated[dict[AnnotationName, AnnotationValue], _Names()]
URL = Annotated[str, Printable(), Cut(MAX_URL_CHARS)]


class WebhookAlert(BaseModel):
    """One alert of an Alertmanager webhook (payload version 4)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    status: Literal["firing", "resolved"]
    labels: Labels = Field(min_length=1, description="must contain alertname")
    annotations: Annotations = Field(default_factory=dict)
    startsAt: Timestamp = ""
    endsAt: Timestamp = ""
    generatorURL: URL = ""
    fingerprint: str = Field(
        default="",
        pattern=r"^[0-9a-fA-F]{0,32}$",
        description="Alertmanager's label fingerprint; computed from the labels when empty",
    )

    @field_validator("labels")
    @classmethod
    def _named(cls, labels: dict[str, str]) -> dict[str, str]:
        if not labels.get("alertname"):
            raise ValueError("labels must contain a non-empty alertname")
        return labels


class ListedAlert(WebhookAlert):
    """An alert in a bare JSON list given to ``tracebound publish``: firing unless it says."""

    status: Literal["firing", "resolved"] = "firing"


class AlertmanagerWebhook(BaseModel):
    """The body Alertmanager POSTs to a ``webhook_configs`` receiver (version 4)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    version: Literal["4"] = "4"
    groupKey: Annotated[str, Printable(), Cut(MAX_GROUP_KEY_CHARS)] = ""
    truncatedAlerts: int = Field(default=0, ge=0)
    status: Literal["firing", "resolved"]
    receiver: Annotated[str, StringConstraints(min_length=1), Printable(), Cut(MAX_RECEIVER_CHARS)]
    groupLabels: Labels = Field(default_factory=dict)
    commonLabels: Labels = Field(default_factory=dict)
    commonAnnotations: Annotations = Field(default_factory=dict)
    externalURL: URL = ""
    alerts: list[WebhookAlert] = Field(min_length=1, max_length=MAX_ALERTS)


class ChatRequest(BaseModel):
    """A question from an operator (or a chat bot speaking for one)."""

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)

    session_id: Text = Field(min_length=1, max_length=200)
    question: Text = Field(min_length=1, max_length=MAX_QUESTION_CHARS)
    language: Literal["zh", "en"] | None = Field(
        default=None, description="answer language; detected from the question when omitted"
    )


def validation_details(exc: ValidationError) -> list[dict[str, Any]]:
    """``{loc, msg}`` per problem: enough to fix the payload, without echoing its values."""
    return [{"loc": list(err["loc"]), "msg": err["msg"]} for err in exc.errors()]
