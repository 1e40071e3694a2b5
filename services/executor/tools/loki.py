"""Grafana Loki as the backend of ``query_logs``.

Why this LogQL shape: topic, service names and level are stream labels, so they
go into the selector (``{topic="…", service="…"}``) and Loki narrows streams
before reading a line; the remaining words become ``|= "word"`` line filters,
all of which must match — the same AND semantics as the PostgreSQL store.
Every value is quoted with LogQL string escaping, so a query can never change
the shape of the LogQL it is put into.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from services.executor.tools.base import ToolBackendError
from services.executor.tools.demo_env import format_ts
from services.executor.tools.httpjson import get_json
from services.executor.tools.logs import LogPage, LogQuery
from services.executor.tools.prometheus import wall_clock

_SERVICE_LABELS = ("service", "service_name", "app", "job")
_LEVEL_LABELS = ("level", "detected_level", "severity")
_INSTANCE_LABELS = ("pod", "instance", "host")
_WORD = re.compile(r"[^\s\"']+")


def quote(value: str) -> str:
    """A LogQL double-quoted string literal."""
    escaped = (
        value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    )
    return f'"{escaped}"'


def build_logql(query: LogQuery) -> str:
    """``{topic="…", service="…", level="…"} |= "word" |= "word"``."""
    matchers = [f"topic={quote(query.topic)}"]
    matchers.extend(f"service={quote(name)}" for name in query.services)
    if query.level:
        matchers.append(f"level={quote(query.level)}")
    services = set(query.services)
    words = [w for w in _WORD.findall(query.text) if w.strip(",;:.()") not in services]
    filters = "".join(f" |= {quote(word)}" for word in words)
    return "{" + ", ".join(matchers) + "}" + filters


def _label(stream: dict[str, str], names: tuple[str, ...]) -> str:
    return next((stream[n] for n in names if stream.get(n)), "")


def parse_streams(body: dict[str, Any]) -> list[tuple[datetime, dict[str, Any]]]:
    """``data.result[].values`` as (time, log-envelope item) pairs."""
    data = body.get("data")
    result = data.get("result") if isinstance(data, dict) else None
    if not isinstance(result, list):
        raise ToolBackendError("loki: response has no data.result list")
    entries: list[tuple[datetime, dict[str, Any]]] = []
    for stream_obj in result:
        if not isinstance(stream_obj, dict):
            raise ToolBackendError("loki: malformed stream in data.result")
        stream = {str(k): str(v) for k, v in (stream_obj.get("stream") or {}).items()}
        for value in stream_obj.get("values") or []:
            try:
                ns, line = int(value[0]), str(value[1])
            except (TypeError, ValueError, IndexError) as exc:
                raise ToolBackendError("loki: malformed value in data.result") from exc
            moment = datetime.fromtimestamp(ns / 1e9, tz=UTC)
            record = {
                "timestamp": format_ts(moment),
                "level": _label(stream, _LEVEL_LABELS).upper(),
                "service": _label(stream, _SERVICE_LABELS),
                "instance": _label(stream, _INSTANCE_LABELS),
                "message": line,
                "metrics": {},
            }
            entries.append((moment, record))
    return entries


class LokiLogSearch:
    """``LogSearch`` over ``GET {url}/loki/api/v1/query_range``."""

    layer = "loki"

    def __init__(
        self, url: str, timeout_s: float, now: Callable[[], datetime] = wall_clock
    ) -> None:
        self._url = url.rstrip("/")
        self._timeout_s = timeout_s
        self._now = now

    def search(self, query: LogQuery) -> LogPage:
        if len(query.services) > 1:
            return LogPage(records=[], total=0)  # no record has two services
        start, end = query.bounds(self._now())
        params = {
            "query": build_logql(query),
            "start": str(int(start.timestamp() * 1e9)),
            "end": str(int(end.timestamp() * 1e9)),
            "limit": str(query.limit),
            "direction": "backward",
        }
        body = get_json("loki", f"{self._url}/loki/api/v1/query_range", params, self._timeout_s)
        entries = parse_streams(body)
        # Loki already applied the selector; re-check the exact filters in case a
        # proxy or an older server ignored part of it.
        kept = [
            (moment, rec)
            for moment, rec in entries
            if all(rec["service"] == name for name in query.services)
            and (query.level is None or rec["level"] == query.level)
        ]
        kept.sort(key=lambda pair: pair[0])
        newest = kept[-query.limit :]
        return LogPage(records=[rec for _m, rec in newest], total=len(kept))
