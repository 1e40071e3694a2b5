"""The list of runs behind ``GET /api/v1/runs``: filters, cursors and the query.

Query parameters are validated into a :class:`RunFilter` (a bad one is a
:class:`FilterError` naming it); pages are ordered newest first and continued
with an opaque cursor (the last row's time and run id). The reads are
parameterised SQL over the ``diagnosis_run`` read model; a page is a typed
:class:`~projections.views.RunList`.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from psycopg import sql
from psycopg.rows import dict_row

from projections.row_values import jsonable
from projections.trace import Connection
from projections.views import STATUSES, VERDICTS, RunList
from tracebound.errors import InvalidInputError

SERVICE = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
SKILL = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")
MODES = ("CHAT", "AIOPS")
MAX_TEXT = 200
DEFAULT_LIMIT = 50
MAX_LIMIT = 500
SORT_AT = "coalesce(requested_at, 'epoch'::timestamptz)"  # as indexed by migration 0006
RUN_COLUMNS = (
    "run_id",
    "session_id",
    "mode",
    "query",
    "status",
    "verdict",
    "final_status",
    "round",
    "selected_skill",
    "requested_at",
    "latency_ms",
    "token_count",
    "updated_at",
    "resolved_at",
    "resolved_alerts",
)


class FilterError(InvalidInputError):
    """A bad query parameter; ``param`` names it so the API can point at it."""

    def __init__(self, param: str, message: str) -> None:
        super().__init__(f"{param}: {message}")
        self.param = param
        self.message = message


@dataclass(frozen=True, slots=True)
class RunFilter:
    """What ``list_runs`` selects; built from query parameters by :func:`parse_filter`."""

    status: str | None = None
    verdict: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    service: str | None = None
    limit: int = DEFAULT_LIMIT
    cursor: str | None = None
    mode: str | None = None
    skill: str | None = None
    text: str | None = None


def _parse_time(param: str, raw: str) -> datetime:
    try:
        moment = datetime.fromisoformat(raw.strip())
    except ValueError:
        raise FilterError(param, "must be an ISO 8601 timestamp") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _one_of(params: Mapping[str, str], name: str, allowed: Sequence[str]) -> str | None:
    """The value of ``name`` if set; one of ``allowed``, or a :class:`FilterError`."""
    value = params.get(name) or None
    if value is not None and value not in allowed:
        raise FilterError(name, f"must be one of {', '.join(allowed)}")
    return value


def _matching(
    params: Mapping[str, str], name: str, pattern: re.Pattern[str], what: str
) -> str | None:
    """The value of ``name`` if set; it must match ``pattern``, else ``must be <what>``."""
    value = params.get(name) or None
    if value is not None and not pattern.match(value):
        raise FilterError(name, f"must be {what}")
    return value


def _limit(params: Mapping[str, str]) -> int:
    if not params.get("limit"):
        return DEFAULT_LIMIT
    try:
        limit = int(params["limit"])
    except ValueError:
        limit = 0
    if not 1 <= limit <= MAX_LIMIT:
        raise FilterError("limit", f"must be an integer from 1 to {MAX_LIMIT}")
    return limit


def parse_filter(params: Mapping[str, str]) -> RunFilter:
    """A :class:`RunFilter` from query parameters; any bad value is a :class:`FilterError`."""
    known = {"status", "verdict", "since", "until", "service", "limit", "cursor"}
    known |= {"mode", "skill", "q"}
    for name in params:
        if name not in known:
            raise FilterError(name, f"unknown parameter; use {', '.join(sorted(known))}")
    status = _one_of(params, "status", STATUSES)
    verdict = _one_of(params, "verdict", VERDICTS)
    since = _parse_time("since", params["since"]) if params.get("since") else None
    until = _parse_time("until", params["until"]) if params.get("until") else None
    if since is not None and until is not None and since > until:
        raise FilterError("until", "must not be before since")
    service = _matching(params, "service", SERVICE, "a service name (letters, digits, _ . -)")
    limit = _limit(params)
    cursor = params.get("cursor") or None
    if cursor is not None:
        decode_cursor(cursor)
    mode = _one_of(params, "mode", MODES)
    skill = _matching(params, "skill", SKILL, "a skill name (letters, digits, _ . : -)")
    text = (params.get("q") or "").strip() or None
    if text is not None and len(text) > MAX_TEXT:
        raise FilterError("q", f"must be at most {MAX_TEXT} characters")
    return RunFilter(status, verdict, since, until, service, limit, cursor, mode, skill, text)


def encode_cursor(sort_at: datetime, run_id: str) -> str:
    """An opaque cursor for the page after the run ``(sort_at, run_id)``."""
    raw = json.dumps([jsonable(sort_at), run_id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    """The keyset position a cursor stands for; anything else is a :class:`FilterError`."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        at, run_id = json.loads(raw)
        if not isinstance(at, str) or not isinstance(run_id, str):
            raise ValueError(cursor)
        return _parse_time("cursor", at), run_id
    except (ValueError, TypeError, binascii.Error, FilterError):
        raise FilterError("cursor", "not a cursor returned by this API") from None


def _service_pattern(service: str) -> str:
    """A case-insensitive POSIX regex matching ``service`` as a whole word of the query."""
    edge = "[^A-Za-z0-9_.-]"
    return f"(^|{edge}){re.escape(service)}($|{edge})"


def _like_pattern(text: str) -> str:
    """A LIKE pattern matching ``text`` literally anywhere (its wildcards escaped)."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def filter_clause(selection: RunFilter) -> tuple[sql.Composable, list[Any]]:
    """The ``WHERE`` clause (possibly empty) and parameters selecting the filtered runs.

    The cursor is not part of it: the run list pages with it, while the dashboard's
    counts and pictures describe the whole selection. ``service`` matches a run whose
    question names the service or one of whose alerts carries it as the ``service``
    label; ``text`` is a case-insensitive substring of the question.
    """
    clauses: list[str] = []
    params: list[Any] = []
    for column, value in (
        ("status", selection.status),
        ("verdict", selection.verdict),
        ("mode", selection.mode),
        ("selected_skill", selection.skill),
    ):
        if value is not None:
            clauses.append(f"{column} = %s")
            params.append(value)
    if selection.since is not None:
        clauses.append("requested_at >= %s")
        params.append(selection.since)
    if selection.until is not None:
        clauses.append("requested_at < %s")
        params.append(selection.until)
    if selection.service is not None:
        clauses.append(
            "(coalesce(query, '') ~* %s OR EXISTS ("
            " SELECT 1 FROM jsonb_array_elements(CASE jsonb_typeof(request -> 'alerts')"
            "  WHEN 'array' THEN request -> 'alerts' ELSE '[]'::jsonb END) AS a(alert)"
            " WHERE lower(a.alert -> 'labels' ->> 'service') = lower(%s)))"
        )
        params.extend([_service_pattern(selection.service), selection.service])
    if selection.text is not None:
        clauses.append("query ILIKE %s")
        params.append(_like_pattern(selection.text))
    if not clauses:
        return sql.SQL(""), params
    return sql.SQL("WHERE ") + sql.SQL(" AND ").join(sql.SQL(c) for c in clauses), params


def list_runs(conn: Connection, **selection: Any) -> RunList:
    """One page of runs selected by :class:`RunFilter` fields given by name."""
    return list_runs_filtered(conn, RunFilter(**selection))


def list_runs_filtered(conn: Connection, selection: RunFilter) -> RunList:
    """One page of runs, newest request first, and the cursor of the next page (if any).

    Pagination is a keyset on ``(requested_at, run_id)`` rather than an offset, so a
    run projected between two page reads neither repeats nor hides another. A run
    whose request has not been projected yet sorts as the oldest. The order is the
    one of the ``diagnosis_run_coalesce_run_id_idx`` index, so a page reads only its
    own rows however many runs there are.
    """
    limit = selection.limit
    if not 1 <= limit <= MAX_LIMIT:
        raise FilterError("limit", f"must be an integer from 1 to {MAX_LIMIT}")
    where, params = filter_clause(selection)
    if selection.cursor is not None:
        after_at, after_id = decode_cursor(selection.cursor)
        where += sql.SQL(" AND " if params else "WHERE ") + sql.SQL(
            f"({SORT_AT}, run_id) < (%s, %s)"
        )
        params.extend([after_at, after_id])
    query = sql.SQL(
        "SELECT {columns}, {sort_at} AS sort_at"
        " FROM diagnosis_run {where} ORDER BY {sort_at} DESC, run_id DESC LIMIT %s"
    ).format(
        columns=sql.SQL(", ").join(map(sql.Identifier, RUN_COLUMNS)),
        sort_at=sql.SQL(SORT_AT),
        where=where,
    )
    params.append(limit + 1)
    with conn.cursor(row_factory=dict_row) as cur:
        cur.execute(query, params)
        rows = cur.fetchall()
    more = len(rows) > limit
    rows = rows[:limit]
    next_cursor = encode_cursor(rows[-1]["sort_at"], rows[-1]["run_id"]) if more else None
    return RunList.model_validate(
        {
            "runs": [jsonable({c: r[c] for c in RUN_COLUMNS}) for r in rows],
            "next_cursor": next_cursor,
        }
    )
