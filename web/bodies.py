"""The HTTP API's own response bodies (the request bodies are the ingest's models).

Their JSON schemas are in the OpenAPI document, generated, like the rest.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class RunAccepted(BaseModel):
    run_id: str
    deduplicated: bool = Field(
        description="true when an identical alert group was accepted within the window"
    )


class WebhookAccepted(BaseModel):
    runs: list[RunAccepted]
    resolved: int = Field(description="resolved alerts recorded (never diagnosed)")


class ChatAccepted(BaseModel):
    run_id: str


class RunPending(BaseModel):
    run_id: str
    status: Literal["running"]
    events: int = Field(description="events of the run seen so far")


class ErrorLocation(BaseModel):
    loc: list[str | int]
    msg: str


class ErrorBody(BaseModel):
    error: str
    detail: list[ErrorLocation] = Field(default_factory=list)
    id: str | None = Field(
        default=None, description="of an internal error (500): the id its log line carries"
    )


class Health(BaseModel):
    status: Literal["ok"]
