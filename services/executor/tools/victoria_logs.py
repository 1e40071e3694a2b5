"""VictoriaLogs as the backend of ``query_logs``.

Why this LogsQL shape: topic, service, level and the alert's scope labels
(namespace, pod) are exact field filters (``service:="…"``), so VictoriaLogs
narrows by field before it reads a message; the remaining words become phrase
filters on the message (``"word"``), all of which must match — the same AND
semantics as Loki and the PostgreSQL store. Every value is quoted, so a query
can never change the shape of the LogsQL it is put into. The window goes in the
``start``/``end`` arguments, the bound in ``| sort by (_time desc) | limit N``;
the total is counted with a second query only when the page is full.

``/select/logsql/query`` answers with JSON lines, one log entry per line, each
holding ``_time``, ``_msg`` and every other field as strings.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from services.executor.tools.base import ToolBackendError
from services.executor.tools.demo_env import format_ts
from services.executor.tools.logs import (
    MAX_SHAPES,
    LogPage,
    LogQuery,
    LogShape,
    shape_message,
)
from services.executor.tools.prometheus import wall_clock

QUERY_PATH = "/select/logsql/query"
MAX_BODY_BYTES = 32 * 1024 * 1024
_SERVICE_FIELDS = ("service", "service_name", "app", "job")
_LEVEL_FIELDS = ("level", "detected_level", "severity")
_INSTANCE_FIELDS = ("pod", "instance", "host")
# Fields of the envelope itself or of VictoriaLogs' bookkeeping: never metrics.
_INTERNAL_FIELDS = frozenset({"_time", "_msg", "_stream", "_stream_id", "topic"})
_WORD = re.compile(r"[^\s\"']+")
_EDGE_PUNCTUATION = ",;:.()[]{}!?"
_FRACTION = re.compile(r"\.(\d+)")

# GET ``url?params`` → the response body; a failure raises ToolBackendError.
Fetch = Callable[[str, Mapping[str, str]], bytes]


def quote(value: str) -> str:
    """A LogsQL double-quoted string literal."""
    escaped = (
        value.replace("\\", "\\\\")
        .replace('"', '\\"')
        .replace("\n", "\\n")
        .replace("\r", "\\r")
        .replace("\t", "\\t")
    )
    return f'"{escaped}"'


def field_filters(query: LogQuery) -> dict[str, str]:
    """The exact field filters: topic, the alert's scope, then the query's own service."""
    fields = {"topic": query.topic}
    fields.update(query.scope)
    if query.services:
        fields["service"] = query.services[0]
    return fields


def message_words(query: LogQuery) -> list[str]:
    """The query's words minus service names, punctuation trimmed, each once."""
    services = set(query.services)
    words = (w.strip(_EDGE_PUNCTUATION) for w in _WORD.findall(query.text))
    return list(dict.fromkeys(w for w in words if w and w not in services))


def build_filter(query: LogQuery) -> str:
    """``(topic:="…" or topic:="") service:="…" level:i("…") "word" …`` (all ANDed).

    Most log shippers write no topic field: a record without one matches any topic
    (LogsQL reads a missing field as empty), a record with another topic does not.
    """
    fields = field_filters(query)
    topic = fields.pop("topic")
    parts = [f'(topic:={quote(topic)} or topic:="")']
    parts.extend(f"{name}:={quote(value)}" for name, value in fields.items())
    if query.level:
        parts.append(f"level:i({quote(query.level)})")
    parts.extend(quote(word) for word in message_words(query))
    return " ".join(parts)


def build_logsql(query: LogQuery) -> str:
    """The page query: the newest ``limit`` matches."""
    return f"{build_filter(query)} | sort by (_time desc) | limit {query.limit}"


def build_count(query: LogQuery) -> str:
    return f"{build_filter(query)} | stats count() as total"


def build_shapes(query: LogQuery) -> str:
    """The matches counted by message shape: each run of digits written ``<N>``.

    Not ``collapse_nums``: it also reads hex-like letters as a number ("AccessLog"
    became "<N>ssLog"); the PostgreSQL store replaces digit runs the same way.
    """
    levels = ", ".join(_LEVEL_FIELDS)
    return (
        f'{build_filter(query)} | replace_regexp ("[0-9]+", "<N>") at _msg'
        f" | stats by (_msg, {levels}) count() hits, min(_time) first, max(_time) last"
        f" | sort by (hits desc) | limit {MAX_SHAPES}"
    )


def to_shape(row: Mapping[str, Any]) -> LogShape:
    """One row of :func:`build_shapes`' answer."""
    fields = {str(k): "" if v is None else str(v) for k, v in row.items()}
    message = shape_message(fields.get("_msg", ""))
    try:
        count = int(fields["hits"])
    except (KeyError, ValueError) as exc:
        raise ToolBackendError("victorialogs: malformed shapes answer") from exc
    first, last = parse_time(fields.get("first", "")), parse_time(fields.get("last", ""))
    return LogShape(message, _first(fields, _LEVEL_FIELDS).upper(), count, first, last)


def parse_time(raw: str) -> datetime:
    """RFC 3339 with up to nanoseconds (``2026-07-08T23:05:28.123456789Z``) as UTC."""
    text = _FRACTION.sub(lambda m: "." + m.group(1)[:6].ljust(6, "0"), raw.strip(), count=1)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise ToolBackendError(f"victorialogs: malformed _time {raw!r}") from exc
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _first(entry: Mapping[str, str], names: tuple[str, ...]) -> str:
    return next((entry[n] for n in names if entry.get(n)), "")


def to_record(entry: Mapping[str, Any]) -> tuple[datetime, dict[str, Any]]:
    """One VictoriaLogs entry as (time, log-envelope item); other fields go to metrics."""
    fields = {str(k): "" if v is None else str(v) for k, v in entry.items()}
    if "_time" not in fields:
        raise ToolBackendError("victorialogs: log entry without _time")
    moment = parse_time(fields["_time"])
    picked = {
        "level": _first(fields, _LEVEL_FIELDS),
        "service": _first(fields, _SERVICE_FIELDS),
        "instance": _first(fields, _INSTANCE_FIELDS),
    }
    used = {
        next((n for n in names if fields.get(n)), "")
        for names in (_LEVEL_FIELDS, _SERVICE_FIELDS, _INSTANCE_FIELDS)
    }
    metrics = {
        k: v
        for k, v in sorted(fields.items())
        if k not in _INTERNAL_FIELDS and k not in used and v != ""
    }
    record = {
        "timestamp": format_ts(moment),
        "level": picked["level"].upper(),
        "service": picked["service"],
        "instance": picked["instance"],
        "message": fields.get("_msg", ""),
        "metrics": metrics,
    }
    return moment, record


def parse_lines(body: bytes) -> list[dict[str, Any]]:
    """The JSON lines of a ``/select/logsql/query`` answer."""
    entries: list[dict[str, Any]] = []
    for line in body.decode("utf-8", errors="replace").splitlines():
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except ValueError as exc:
            raise ToolBackendError("victorialogs: response line is not JSON") from exc
        if not isinstance(entry, dict):
            raise ToolBackendError("victorialogs: response line is not a JSON object")
        entries.append(entry)
    return entries


def http_get(timeout_s: float) -> Fetch:
    """A :data:`Fetch` over the standard library; every failure is a ToolBackendError."""

    def fetch(url: str, params: Mapping[str, str]) -> bytes:
        if not url.startswith(("http://", "https://")):
            raise ToolBackendError(f"victorialogs: unsupported URL {url!r}")
        full = f"{url}?{urllib.parse.urlencode(params)}"
        request = urllib.request.Request(full)  # noqa: S310
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310
                body: bytes = response.read(MAX_BODY_BYTES + 1)
        except urllib.error.HTTPError as exc:
            detail = exc.read(300).decode("utf-8", errors="replace").strip()
            raise ToolBackendError(f"victorialogs: HTTP {exc.code} from {url}: {detail}") from exc
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ToolBackendError(f"victorialogs: unreachable at {url}: {reason}") from exc
        if len(body) > MAX_BODY_BYTES:
            raise ToolBackendError(f"victorialogs: response from {url} is larger than allowed")
        return body

    return fetch


class VictoriaLogsSearch:
    """``LogSearch`` over ``GET {url}/select/logsql/query``."""

    layer = "victorialogs"

    def __init__(
        self,
        url: str,
        timeout_s: float,
        now: Callable[[], datetime] = wall_clock,
        fetch: Fetch | None = None,
    ) -> None:
        self._url = url.rstrip("/")
        self._now = now
        self._fetch = fetch or http_get(timeout_s)

    def window(self, query: LogQuery) -> dict[str, str]:
        start, end = query.bounds(self._now())
        return {"start": start.isoformat(), "end": end.isoformat()}

    def search(self, query: LogQuery) -> LogPage:
        if len(query.services) > 1:
            return LogPage(records=[], total=0)  # no record has two services
        window = self.window(query)
        url = self._url + QUERY_PATH
        body = self._fetch(url, {"query": build_logsql(query), **window, "limit": str(query.limit)})
        entries = [to_record(entry) for entry in parse_lines(body)]
        # VictoriaLogs already applied the filters; re-check the exact ones in case a
        # proxy or another server ignored part of them.
        wanted = field_filters(query)
        kept = [
            (moment, rec)
            for moment, rec in entries
            if rec["service"] == wanted.get("service", rec["service"])
            and (query.level is None or rec["level"] == query.level)
        ]
        kept.sort(key=lambda pair: pair[0])
        newest = kept[-query.limit :]
        total = len(newest)
        if len(entries) >= query.limit:
            total = max(total, self._count(url, query, window))
        return LogPage(records=[rec for _m, rec in newest], total=total)

    def _count(self, url: str, query: LogQuery, window: Mapping[str, str]) -> int:
        rows = parse_lines(self._fetch(url, {"query": build_count(query), **window}))
        try:
            return int(rows[0]["total"]) if rows else 0
        except (KeyError, TypeError, ValueError) as exc:
            raise ToolBackendError("victorialogs: malformed count answer") from exc

    def shapes(self, query: LogQuery) -> list[LogShape]:
        if len(query.services) > 1:
            return []
        body = self._fetch(
            self._url + QUERY_PATH, {"query": build_shapes(query), **self.window(query)}
        )
        return [to_shape(row) for row in parse_lines(body)]
