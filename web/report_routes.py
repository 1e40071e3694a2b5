"""The routes of the report pages: ``GET /reports`` and ``GET /reports/{report_id}``.

They check the token the way the other pages do (header or sign-in cookie) and
read the eval tables through :mod:`projections.reports` on a connection of
their own in the thread pool. A report id is a positive integer; anything else
is "no such report", never a query.
"""

from __future__ import annotations

from pydantic import SecretStr
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from projections import reports
from web import trace_routes
from web.html import FORM_PAGE_HEADERS
from web.http import SIGN_IN_COOKIE, ApiError, credentials_match
from web.report_page import render_list, render_report
from web.trace_routes import Connect, page_error, page_unauthorized, read

MAX_ID = 2**63 - 1  # bigserial


def _report_id(text: str) -> int:
    """A report id from a path or query value; 404 for anything that cannot be one."""
    if not text.isascii() or not text.isdigit() or len(text) > 19 or not 0 < int(text) <= MAX_ID:
        raise ApiError(404, "no such report")
    return int(text)


def routes(token: SecretStr | None, connect: Connect | None = None) -> list[Route]:
    """``GET /reports`` (newest first, ``?before=ID`` pages) and ``GET /reports/{report_id}``."""
    opened = connect or trace_routes.default_connect()
    secret = token.get_secret_value().encode() if token is not None else None

    async def listing(request: Request) -> Response:
        if not credentials_match(request.headers.raw, secret):
            return page_unauthorized()
        given = request.query_params.get("before")
        try:
            before = _report_id(given) if given else None
            heads, next_before = await read(opened, lambda conn: reports.list_reports(conn, before))
        except ApiError as exc:
            return page_error(exc)
        signed_in = request.cookies.get(SIGN_IN_COOKIE) is not None
        return HTMLResponse(render_list(heads, next_before, signed_in), headers=FORM_PAGE_HEADERS)

    async def one(request: Request) -> Response:
        if not credentials_match(request.headers.raw, secret):
            return page_unauthorized()
        try:
            report_id = _report_id(str(request.path_params["report_id"]))
            found = await read(opened, lambda conn: reports.read_report(conn, report_id))
            if found is None:
                raise ApiError(404, f"no report {report_id}")
        except ApiError as exc:
            return page_error(exc)
        signed_in = request.cookies.get(SIGN_IN_COOKIE) is not None
        return HTMLResponse(render_report(found, signed_in), headers=FORM_PAGE_HEADERS)

    return [
        Route("/reports", listing, methods=["GET"]),
        Route("/reports/{report_id}", one, methods=["GET"]),
    ]
