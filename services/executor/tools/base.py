"""The evidence-tool port: what every tool takes, returns and promises.

Why a port: the executor (and replay, with frozen outputs) must treat the three
tools alike — validate parameters with the tool's own model, call ``run``, and
record the :class:`ToolOutcome` as a ``tool_invocation``. A tool never raises for
a failing *external* backend (Prometheus, Loki): that is a fact about the world,
recorded as ``evidence_status=failed`` so no claim can cite it. Only our own
database failing raises :class:`~tracebound.errors.TransientError`, because the
runtime retries that instead of recording a bogus failure.
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict

from tracebound.errors import InvalidInputError, TraceboundError
from tracebound.events import Alert, RetrievalDetails, ToolBackend
from tracebound.events.records import EPOCH

PREVIEW_LIMIT = 300
# The backend name of a tool with nothing configured behind it (no Prometheus, no logs).
NO_BACKEND = "none"

P = TypeVar("P", bound=BaseModel)


class ToolBackendError(TraceboundError):
    """An external evidence backend failed (unreachable, 5xx, unparsable answer)."""


class ToolParams(BaseModel):
    """Base of every parameter model: unknown parameters are errors, not ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True)


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """One tool run as the executor records it; ``output`` is the raw envelope."""

    output: dict[str, Any]
    retrieval_details: RetrievalDetails
    success: bool
    error_message: str | None = None
    retrieval_layer: str | None = None
    l0_match_count: int | None = None
    l1_match_count: int | None = None
    output_preview: str = ""
    # Set only when another backend than the tool's own answered: a replay of a
    # recorded call keeps the backend it was recorded with.
    backend: ToolBackend | None = None


@dataclass
class RunContext:
    """State one diagnosis run shares across its tool calls.

    ``alerts`` and ``requested_at`` come from the request, so the alerts a run
    was started by are evidence of their own, and their durations are measured
    against the request time — the same on every replay, never the wall clock.
    """

    run_id: str
    seen_documents: set[str] = field(default_factory=set)
    alerts: tuple[Alert, ...] = ()
    requested_at: datetime = EPOCH


class EvidenceTool(Protocol):
    """A tool the executor may call; ``params_model`` is its parameter schema."""

    name: str
    description: str
    params_model: type[BaseModel]
    backend: ToolBackend

    def run(self, params: BaseModel, ctx: RunContext) -> ToolOutcome: ...


def public_url(url: str) -> str:
    """``url`` without user, password, query or fragment: safe to record and show."""
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError:
        return ""
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{port}" if port else host
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


def coerce_params(params: BaseModel, model: type[P]) -> P:
    """``params`` as ``model``: the executor may hand over any validated model."""
    if isinstance(params, model):
        return params
    try:
        return model.model_validate(params.model_dump())
    except ValueError as exc:
        raise InvalidInputError(f"parameters do not fit {model.__name__}: {exc}") from exc


def preview(text: str) -> str:
    """``text`` cut to the preview limit on a word boundary."""
    text = " ".join(text.split())
    if len(text) <= PREVIEW_LIMIT:
        return text
    cut = text[: PREVIEW_LIMIT - 1]
    space = cut.rfind(" ")
    if space > PREVIEW_LIMIT // 2:
        cut = cut[:space]
    return cut + "…"


def failed_outcome(
    envelope: dict[str, Any], error: str, layer: str, *, l0: int | None = None
) -> ToolOutcome:
    """A backend failure: success false, ``evidence_status=failed``, nothing citable."""
    output = {**envelope, "success": False, "message": error}
    return ToolOutcome(
        output=output,
        retrieval_details=RetrievalDetails(evidence_status="failed", evidence_refs=()),
        success=False,
        error_message=error,
        retrieval_layer=layer,
        l0_match_count=l0,
        output_preview=preview(f"failed: {error}"),
    )
