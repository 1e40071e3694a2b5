"""What the ingest accepts, as pydantic models: Alertmanager webhooks and chat questions.

The same models validate HTTP bodies and ``tracebound publish`` files, and their
JSON schemas are in the OpenAPI document, so what is documented is what is checked.
Alertmanager payloads ignore unknown fields (newer Alertmanager versions add
some); the chat body is ours and rejects them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    field_validator,
)

# RFC 3339 as Alertmanager writes it (nanosecond fractions included; Python's
# datetime cannot hold those, so the text is kept and only its shape is checked).
RFC3339 = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$"
MAX_ALERTS = 1000
MAX_QUESTION_CHARS = 4000

Timestamp = Annotated[str, StringConstraints(pattern=RFC3339)]
Labels = dict[Annotated[str, StringConstraints(min_length=1, max_length=1024)], str]


class WebhookAlert(BaseModel):
    """One alert of an Alertmanager webhook (payload version 4)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    status: Literal["firing", "resolved"]
    labels: Labels = Field(min_length=1, description="must contain alertname")
    annotations: dict[str, str] = Field(default_factory=dict)
    startsAt: Timestamp | Literal[""] = ""
    endsAt: Timestamp | Literal[""] = ""
    generatorURL: str = Field(default="", max_length=4096)
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
    groupKey: str = Field(default="", max_length=4096)
    truncatedAlerts: int = Field(default=0, ge=0)
    status: Literal["firing", "resolved"]
    receiver: str = Field(min_length=1, max_length=256)
    groupLabels: dict[str, str] = Field(default_factory=dict)
    commonLabels: dict[str, str] = Field(default_factory=dict)
    commonAnnotations: dict[str, str] = Field(default_factory=dict)
    externalURL: str = Field(default="", max_length=4096)
    alerts: list[WebhookAlert] = Field(min_length=1, max_length=MAX_ALERTS)


class ChatRequest(BaseModel):
    """A question from an operator (or a chat bot speaking for one)."""

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)

    session_id: str = Field(min_length=1, max_length=200)
    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS)
    language: Literal["zh", "en"] | None = Field(
        default=None, description="answer language; detected from the question when omitted"
    )


def validation_details(exc: ValidationError) -> list[dict[str, Any]]:
    """``{loc, msg}`` per problem: enough to fix the payload, without echoing its values."""
    return [{"loc": list(err["loc"]), "msg": err["msg"]} for err in exc.errors()]
