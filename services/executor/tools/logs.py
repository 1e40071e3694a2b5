"""``query_logs``: search one log topic and cite each returned record.

Why service names are exact filters: a query such as ``inventory-service
HikariCP`` asks about one service. Ranking other services' HikariCP lines as
hits would let a claim about inventory-service cite order-service evidence, so
every ``*-service`` token in the query (and the ``service`` parameter) must
equal the record's service; when none does, the answer is ``$.no_evidence``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field, model_validator

from services.executor.tools import refs
from services.executor.tools.base import (
    NO_BACKEND,
    RunContext,
    ToolBackendError,
    ToolOutcome,
    ToolParams,
    coerce_params,
    failed_outcome,
    preview,
)
from services.executor.tools.demo_env import format_ts
from tracebound.events import Alert, ToolBackend

TOOL_NAME = "query_logs"
_SERVICE_TOKEN = re.compile(r"(?<![\w.-])[A-Za-z0-9][\w-]*-service(?![\w-])")
_LEVEL_ALIASES = {"WARNING": "WARN", "ERR": "ERROR", "FATAL": "CRITICAL"}
# Alert labels a backend may scope a search to (VictoriaLogs does), in this order.
SCOPE_LABELS = ("service", "namespace", "pod")


MAX_SPAN = timedelta(minutes=1440)


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


class QueryLogsParams(ToolParams):
    log_topic: str = Field(default="application-logs", min_length=1, max_length=200)
    query: str = Field(min_length=1, max_length=500)
    service: str | None = Field(default=None, max_length=200)
    level: str | None = Field(default=None, max_length=20)
    window_minutes: int = Field(default=60, ge=1, le=1440)
    limit: int = Field(default=20, ge=1, le=200)
    # A fixed span (both set) instead of the last ``window_minutes``: the moment a
    # change began, however long ago. Times without a zone are UTC.
    start: datetime | None = None
    end: datetime | None = None
    # also count the matches by message shape (numbers set aside), most frequent first
    shapes: bool = False

    @model_validator(mode="after")
    def _span(self) -> QueryLogsParams:
        if (self.start is None) != (self.end is None):
            raise ValueError("start and end go together")
        if self.start is not None and self.end is not None:
            start, end = _utc(self.start), _utc(self.end)
            if not start < end <= start + MAX_SPAN:
                raise ValueError(f"end must follow start, by at most {MAX_SPAN}")
        return self


@dataclass(frozen=True, slots=True)
class LogQuery:
    """A backend-neutral search: full text AND exact service names AND filters."""

    topic: str
    text: str
    services: tuple[str, ...]
    level: str | None
    window_minutes: int
    limit: int
    # Labels every alert of the queried service agrees on: see :func:`alert_scope`.
    scope: tuple[tuple[str, str], ...] = ()
    span: tuple[datetime, datetime] | None = None  # fixed, in UTC; else the last window

    def bounds(self, now: datetime) -> tuple[datetime, datetime]:
        """The searched span: the fixed one, else ``window_minutes`` up to ``now``."""
        if self.span is not None:
            return self.span
        end = _utc(now)
        return end - timedelta(minutes=self.window_minutes), end


@dataclass(frozen=True, slots=True)
class LogPage:
    """The newest ``limit`` matches (oldest first) and how many matched in all."""

    records: list[dict[str, Any]]
    total: int


# The most frequent message shapes a search returns, and the longest shape kept.
MAX_SHAPES = 5
MAX_SHAPE_CHARS = 240


def shape_message(message: str) -> str:
    """A shape as stated: whitespace collapsed, cut to :data:`MAX_SHAPE_CHARS` with "…"."""
    text = " ".join(message.split())
    return text if len(text) <= MAX_SHAPE_CHARS else text[: MAX_SHAPE_CHARS - 1] + "…"


@dataclass(frozen=True, slots=True)
class LogShape:
    """Matches of one message shape (each number as ``<N>``) and level: how many, when."""

    message: str
    level: str
    count: int
    first: datetime
    last: datetime


class LogSearch(Protocol):
    """A log backend: VictoriaLogs, Loki, the demo's PostgreSQL store, or none."""

    layer: str

    def search(self, query: LogQuery) -> LogPage: ...


@runtime_checkable
class LogShapes(Protocol):
    """A backend that also counts matches by message shape (VictoriaLogs, the PostgreSQL
    store); others (Loki) say they cannot."""

    def shapes(self, query: LogQuery) -> list[LogShape]: ...


def shape_subject(service: str) -> str:
    """Who logged a shape's lines, as its ref and its claim name them."""
    return service or "the search"


def shape_text(service: str, shape: LogShape) -> str:
    """``cart logged 30 WARN lines like "…" from 2026-12-06 07:08:31 to …``: a shape's ref."""
    lines = f'{shape.count} {shape.level or "-"} lines like "{shape.message}"'
    return (
        f"{shape_subject(service)} logged {lines} "
        f"from {format_ts(shape.first)} to {format_ts(shape.last)}"
    )


class NoLogBackend:
    """No logs backend configured: every search fails, so no query reads as "no logs"."""

    layer = NO_BACKEND

    def __init__(self, reason: str) -> None:
        self._reason = reason

    def search(self, query: LogQuery) -> LogPage:
        raise ToolBackendError(self._reason)


def service_names(text: str, service: str | None) -> tuple[str, ...]:
    """The distinct service names a query pins: ``*-service`` tokens plus the parameter."""
    names = [m.group(0) for m in _SERVICE_TOKEN.finditer(text)]
    if service:
        names.append(service)
    return tuple(dict.fromkeys(names))


def normalise_level(level: str | None) -> str | None:
    if not level or not level.strip():
        return None
    upper = level.strip().upper()
    return _LEVEL_ALIASES.get(upper, upper)


def alert_scope(alerts: Sequence[Alert], services: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """The :data:`SCOPE_LABELS` values shared by the run's alerts of the queried services.

    A query that names no service takes every alert of the run. A label the
    alerts disagree on, or one they lack, is left out rather than guessed.
    """
    relevant = [a.labels for a in alerts if not services or a.labels.get("service") in services]
    scope: list[tuple[str, str]] = []
    for key in SCOPE_LABELS if relevant else ():
        values = {labels.get(key) or "" for labels in relevant}
        if len(values) == 1 and (value := values.pop()):
            scope.append((key, value))
    return tuple(scope)


def to_log_query(params: QueryLogsParams, alerts: Sequence[Alert] = ()) -> LogQuery:
    services = service_names(params.query, params.service)
    return LogQuery(
        topic=params.log_topic,
        text=params.query.strip(),
        services=services,
        level=normalise_level(params.level),
        window_minutes=params.window_minutes,
        limit=params.limit,
        scope=alert_scope(alerts, services),
        span=(
            (_utc(params.start), _utc(params.end))
            if params.start is not None and params.end is not None
            else None
        ),
    )


class QueryLogsTool:
    """Search logs; each returned record becomes ``$.logs[i]``."""

    name = TOOL_NAME
    description = (
        "Full-text search of one log topic (application-logs, system-metrics, "
        "database-slow-query, system-events) in a time window; a service name must match "
        "exactly. Records are $.logs[i]; else $.no_evidence."
    )
    params_model: type[BaseModel] = QueryLogsParams

    def __init__(
        self, backend: LogSearch, region: str = "local", tool_backend: ToolBackend | None = None
    ) -> None:
        self._backend = backend
        self._region = region
        self.backend = tool_backend or ToolBackend(name=backend.layer)

    def run(self, params: BaseModel, ctx: RunContext) -> ToolOutcome:
        p = coerce_params(params, QueryLogsParams)
        envelope: dict[str, Any] = {
            "success": True,
            "region": self._region,
            "log_topic": p.log_topic,
            "query": p.query,
            "logs": [],
            "total": 0,
            "message": "",
        }
        try:
            query = to_log_query(p, ctx.alerts)
            page = self._backend.search(query)
        except ToolBackendError as exc:
            return failed_outcome(envelope, str(exc), self._backend.layer)
        layer = self._backend.layer
        if not page.records:
            message = "no matching logs"
            envelope["message"] = message
            return ToolOutcome(
                output=envelope,
                retrieval_details=refs.no_evidence(TOOL_NAME, p.query, p.log_topic, message),
                success=True,
                retrieval_layer=layer,
                output_preview=preview(f"no matching logs in {p.log_topic} for '{p.query}'"),
            )
        shown = len(page.records)
        message = f"found {page.total} matching log records" + (
            f", showing the newest {shown}" if page.total > shown else ""
        )
        envelope.update(logs=page.records, total=page.total, message=message)
        texts = [refs.log_text(record) for record in page.records]
        shapes = self._shapes(query, envelope) if p.shapes else []
        return ToolOutcome(
            output=envelope,
            retrieval_details=refs.supported(
                (*refs.item_refs("logs", texts), *refs.item_refs("shapes", shapes))
            ),
            success=True,
            retrieval_layer=layer,
            output_preview=preview(f"{message}: " + " | ".join(texts)),
        )

    def _shapes(self, query: LogQuery, envelope: dict[str, Any]) -> list[str]:
        """The shape items' ref texts; a backend that cannot count, or a failed count, is
        noted in the envelope and the lines stand."""
        if not isinstance(self._backend, LogShapes):
            envelope["shapes_note"] = f"{self._backend.layer} does not count message shapes"
            return []
        try:
            found = self._backend.shapes(query)[:MAX_SHAPES]
        except ToolBackendError as exc:
            envelope["shapes_note"] = f"message shapes not counted: {exc}"
            return []
        service = query.services[0] if query.services else ""
        envelope["shapes"] = [
            {
                "service": service,
                "message": shape.message,
                "level": shape.level,
                "count": shape.count,
                "first": format_ts(shape.first),
                "last": format_ts(shape.last),
            }
            for shape in found
        ]
        return [shape_text(service, shape) for shape in found]
