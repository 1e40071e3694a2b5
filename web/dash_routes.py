"""The routes of the runs dashboard: ``/`` (and ``/runs``), and the sign-in cookie.

The dashboard reads with the run list's own query (:mod:`projections.run_list`)
and adds :mod:`projections.dashboard`'s details and summary, all on one connection
in the thread pool. When a token is set, a browser trades it once for an
HttpOnly, SameSite=Strict cookie (``POST /login``) so that it never appears in a
URL; the cookie holds an expiry and its HMAC under the token, never the token,
and the API accepts it too (:func:`web.http.credentials_match`).
"""

from __future__ import annotations

import hmac
import time
from urllib.parse import parse_qs

from pydantic import SecretStr
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from projections import dashboard, run_list
from tracebound.runtime.progress import stack_state_dir
from tracebound.settings import StackSettings
from tracebound.stack.services import service_states
from web import trace_routes
from web.dash_page import DashView, form_values, render_dashboard, render_login
from web.html import FORM_PAGE_HEADERS
from web.http import SESSION_S, SIGN_IN_COOKIE, ApiError, cookie_value, credentials_match
from web.live import LIVE_PAGE_HEADERS
from web.trace_routes import Connect, page_error, page_unauthorized, read

MAX_LOGIN_BYTES = 4096


def role_health() -> tuple[tuple[str, str, str], ...]:
    """``(role, state, problem)`` of the local stack's services, when it started this one."""
    state_dir = stack_state_dir()
    if state_dir is None:
        return ()
    states = service_states(StackSettings(state_dir=state_dir), None)
    return tuple((s.name, s.state, s.problem) for s in states)


async def _form_token(request: Request) -> bytes:
    """The ``token`` field of a small urlencoded form; anything larger is refused unread."""
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_LOGIN_BYTES:
            raise ApiError(413, "the sign-in form is larger than a token")
    try:
        fields = parse_qs(body.decode("utf-8", "replace"), max_num_fields=4)
    except ValueError:  # more fields than a sign-in form has
        raise ApiError(400, "the sign-in form has more fields than a token") from None
    return (fields.get("token") or [""])[0].strip().encode()


async def runs_alias(request: Request) -> Response:
    """``/runs`` is the dashboard at ``/``, with the same query."""
    query = request.url.query
    return RedirectResponse("/?" + query if query else "/", 308)


def routes(token: SecretStr | None, connect: Connect | None = None) -> list[Route]:
    """``GET /``, ``GET /runs``, ``POST /login`` (and its form), ``POST /logout``."""
    opened = connect or trace_routes.default_connect()
    secret = token.get_secret_value().encode() if token is not None else None

    async def runs(request: Request) -> Response:
        if not credentials_match(request.headers.raw, secret):
            return page_unauthorized()
        params = form_values(request.query_params)
        try:
            selection = trace_routes.run_filter({**params, "limit": str(dashboard.PAGE_SIZE)})
        except run_list.FilterError as exc:
            return page_error(ApiError(400, f"invalid filter {exc.param}: {exc.message}"))
        started = time.perf_counter()
        try:
            found = await read(opened, lambda conn: dashboard.read_dashboard(conn, selection))
        except ApiError as exc:
            return page_error(exc)
        spent_ms = (time.perf_counter() - started) * 1000
        cookie = request.cookies.get(SIGN_IN_COOKIE) is not None
        roles = await run_in_threadpool(role_health)
        view = DashView(params, found.page, found.details, found.summary, cookie, roles)
        return HTMLResponse(
            render_dashboard(view),
            headers={**LIVE_PAGE_HEADERS, "Server-Timing": f"db;dur={spent_ms:.1f}"},
        )

    async def login_form(_request: Request) -> Response:
        if secret is None:
            return RedirectResponse("/", 303)
        return HTMLResponse(render_login(), headers=FORM_PAGE_HEADERS)

    async def login(request: Request) -> Response:
        if secret is None:
            return RedirectResponse("/", 303)
        try:
            given = await _form_token(request)
        except ApiError as exc:
            return page_error(exc)
        if not hmac.compare_digest(given, secret):
            return HTMLResponse(
                render_login("That is not this server's token."), 401, headers=FORM_PAGE_HEADERS
            )
        reply = RedirectResponse("/", 303)
        reply.set_cookie(
            SIGN_IN_COOKIE,
            cookie_value(secret),
            max_age=SESSION_S,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
            path="/",
        )
        return reply

    async def logout(_request: Request) -> Response:
        reply = RedirectResponse("/login" if secret is not None else "/", 303)
        reply.delete_cookie(SIGN_IN_COOKIE, path="/", httponly=True, samesite="strict")
        return reply

    return [
        Route("/", runs, methods=["GET"]),
        Route("/runs", runs_alias, methods=["GET"]),
        Route("/login", login_form, methods=["GET"]),
        Route("/login", login, methods=["POST"]),
        Route("/logout", logout, methods=["POST"]),
    ]
