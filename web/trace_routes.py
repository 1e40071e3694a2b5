"""The read-side routes of the API: run list, trace JSON and the trace page.

The routes read PostgreSQL in the thread pool (psycopg is blocking) with a
connection per request: traces are read by people, not at a rate where a pool
would pay off.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import psycopg
from pydantic import SecretStr
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from projections import run_list, trace
from services.ingest.models import control_character
from tracebound.events.base import RUN_ID
from tracebound.rfc3339 import EARLIEST, LATEST, in_window
from tracebound.settings import PostgresSettings
from tracebound.tracing.link import TraceLinkSettings
from web import trace_page
from web.dash_page import render_login
from web.html import FORM_PAGE_HEADERS, PAGE_HEADERS, render_message
from web.http import ApiError, credentials_match, run_id_param

Connect = Callable[[], psycopg.Connection[Any]]
T = TypeVar("T")


def default_connect(settings: PostgresSettings | None = None) -> Connect:
    """Connections to the read models' database, read from ``TRACEBOUND_PG_DSN``."""
    dsn = (settings or PostgresSettings()).dsn.get_secret_value()

    def connect() -> psycopg.Connection[Any]:
        return psycopg.connect(dsn, autocommit=True, connect_timeout=5)

    return connect


def _read(connect: Connect, work: Callable[[psycopg.Connection[Any]], T]) -> T:
    """Run ``work`` on a fresh connection; database trouble becomes a 503 (retry later)."""
    try:
        with connect() as conn:
            return work(conn)
    except psycopg.errors.UndefinedTable:
        raise ApiError(
            503, "the read models are not set up yet (tracebound projections migrate)"
        ) from None
    except psycopg.OperationalError as exc:
        raise ApiError(
            503, f"the read models are unavailable: {exc}".strip(), headers={"Retry-After": "5"}
        ) from None


def read(connect: Connect, work: Callable[[psycopg.Connection[Any]], T]) -> Awaitable[T]:
    """:func:`_read` in the thread pool, for the routes of every page."""
    return run_in_threadpool(_read, connect, work)


def run_filter(params: Mapping[str, str]) -> run_list.RunFilter:
    """:func:`run_list.parse_filter`, with times inside the window the database and pages hold.

    A ``since``, ``until`` or cursor time outside 1970-2200, or a cursor whose run id
    holds a control character, is a :class:`run_list.FilterError` like any bad value.
    """
    selection = run_list.parse_filter(params)
    for name, moment in (("since", selection.since), ("until", selection.until)):
        if moment is not None and not in_window(moment):
            raise run_list.FilterError(
                name, f"must lie from {EARLIEST:%Y-%m-%d} to {LATEST:%Y-%m-%d} UTC"
            )
    if selection.cursor is not None:
        at, run_id = run_list.decode_cursor(selection.cursor)
        if not in_window(at) or control_character(run_id) is not None:
            raise run_list.FilterError("cursor", "not a cursor returned by this API")
    return selection


def page_unauthorized() -> Response:
    """A page's answer without the token: 401 and the sign-in form (for a browser)."""
    return HTMLResponse(
        render_login(),
        401,
        headers={**FORM_PAGE_HEADERS, "WWW-Authenticate": 'Bearer realm="tracebound"'},
    )


def page_error(exc: ApiError) -> Response:
    """A refusal as a page, escaped like the pages themselves."""
    return HTMLResponse(
        render_message(f"{exc.status}", exc.error),
        exc.status,
        headers={**PAGE_HEADERS, **exc.headers},
    )


def routes(token: SecretStr | None, connect: Connect | None = None) -> list[Route]:
    """``GET /api/v1/runs``, ``GET /api/v1/runs/{run_id}/trace`` and the page ``/runs/{run_id}``.

    The ``/api/v1`` routes sit behind the app's bearer middleware; the page is outside
    that prefix, so it checks the same token (header or sign-in cookie) itself.
    """
    opened = connect or default_connect()
    secret = token.get_secret_value().encode() if token is not None else None
    link = TraceLinkSettings()

    async def list_runs(request: Request) -> Response:
        try:
            selection = run_filter(dict(request.query_params))
        except run_list.FilterError as exc:
            raise ApiError(
                400, "invalid query parameter", [{"loc": ["query", exc.param], "msg": exc.message}]
            ) from None
        page = await read(opened, lambda conn: run_list.list_runs_filtered(conn, selection))
        return JSONResponse(page.document())

    async def run_trace(request: Request) -> Response:
        run_id = run_id_param(request)
        found = await read(opened, lambda conn: trace.build_trace(conn, run_id))
        if found is None:
            raise ApiError(404, f"no run {run_id} in the read model")
        return JSONResponse(found.document())

    async def page(request: Request) -> Response:
        if not credentials_match(request.headers.raw, secret):
            return page_unauthorized()
        run_id = str(request.path_params["run_id"])
        try:
            if not RUN_ID.match(run_id):
                raise ApiError(404, "no such run")
            found = await read(opened, lambda conn: trace.build_trace(conn, run_id))
            if found is None:
                raise ApiError(404, f"no run {run_id} in the read model")
        except ApiError as exc:
            return page_error(exc)
        document = found.document()
        trace_url = link.url(document["run"].get("trace_id"))
        return HTMLResponse(trace_page.render_page(document, trace_url), headers=PAGE_HEADERS)

    return [
        Route("/api/v1/runs", list_runs, methods=["GET"]),
        Route("/api/v1/runs/{run_id}/trace", run_trace, methods=["GET"]),
        Route("/runs/{run_id}", page, methods=["GET"]),
    ]
