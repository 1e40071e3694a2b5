"""HTTP plumbing of the API: errors, bearer auth and bounded body reading.

Every refusal is a JSON ``ErrorBody`` with a reason a person can act on, and it
happens before anything is published: the body is size-checked while it is
read (a missing or lying Content-Length cannot get past the limit), then parsed,
then validated.
"""

from __future__ import annotations

import base64
import hmac
import json
from collections.abc import Iterable
from typing import Any

from pydantic import SecretStr
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from tracebound.events.base import RUN_ID

PROTECTED_PREFIX = "/api/v1"
SIGN_IN_COOKIE = "tracebound_token"


class ApiError(Exception):
    """A refusal with its status code, reason and optional ``{loc, msg}`` details."""

    def __init__(
        self,
        status: int,
        error: str,
        detail: list[dict[str, Any]] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(error)
        self.status = status
        self.error = error
        self.detail = detail or []
        self.headers = headers or {}


def error_response(exc: ApiError) -> JSONResponse:
    return JSONResponse(
        {"error": exc.error, "detail": exc.detail}, status_code=exc.status, headers=exc.headers
    )


async def api_error_handler(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return error_response(exc)


async def http_error_handler(_request: Request, exc: Exception) -> Response:
    """Starlette's own 404/405 in the same JSON shape as ours."""
    assert isinstance(exc, HTTPException)
    return JSONResponse(
        {"error": exc.detail, "detail": []}, status_code=exc.status_code, headers=exc.headers
    )


def bearer_matches(authorization: bytes, token: bytes) -> bool:
    """Whether an ``Authorization`` header value is ``Bearer <token>`` (constant-time)."""
    scheme, _, given = authorization.partition(b" ")
    return scheme.lower() == b"bearer" and hmac.compare_digest(given.strip(), token)


def cookie_value(token: bytes) -> str:
    """The token as the sign-in cookie holds it (base64url: any byte is a valid cookie)."""
    return base64.urlsafe_b64encode(token).decode().rstrip("=")


def cookie_matches(header: bytes, token: bytes) -> bool:
    """Whether a ``Cookie`` header carries the sign-in cookie of ``token`` (constant-time)."""
    expected = cookie_value(token).encode()
    for part in header.split(b";"):
        name, _, value = part.strip().partition(b"=")
        if name == SIGN_IN_COOKIE.encode() and hmac.compare_digest(value.strip(), expected):
            return True
    return False


def credentials_match(headers: Iterable[tuple[bytes, bytes]], token: bytes | None) -> bool:
    """Whether a request may read: no token is set, or the bearer header or cookie has it.

    A browser signs in once (``POST /login``) and then sends the HttpOnly,
    SameSite=Strict cookie, so the token is never part of a URL, a history entry
    or an access log line; scripts send the ``Authorization`` header.
    """
    if token is None:
        return True
    for name, value in headers:
        if name == b"authorization" and bearer_matches(value, token):
            return True
        if name == b"cookie" and cookie_matches(value, token):
            return True
    return False


def run_id_param(request: Request) -> str:
    """The ``{run_id}`` path parameter, or a 422 when it is not a run id."""
    run_id = str(request.path_params["run_id"])
    if not RUN_ID.match(run_id):
        raise ApiError(422, "invalid run id", [{"loc": ["path", "run_id"], "msg": "bad format"}])
    return run_id


class BearerAuth:
    """ASGI middleware: ``/api/v1`` needs the token when one is set (see :func:`credentials_match`).

    The comparison is constant-time; the token never reaches a log or a response.
    """

    def __init__(self, app: ASGIApp, token: SecretStr | None) -> None:
        self.app = app
        self._token = token.get_secret_value().encode() if token else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            self._token is not None
            and scope["type"] == "http"
            and str(scope.get("path", "")).startswith(PROTECTED_PREFIX)
            and not credentials_match(scope.get("headers", ()), self._token)
        ):
            reply = error_response(
                ApiError(
                    401,
                    "missing or invalid bearer token",
                    headers={"WWW-Authenticate": 'Bearer realm="tracebound"'},
                )
            )
            await reply(scope, receive, send)
            return
        await self.app(scope, receive, send)


async def read_json(request: Request, limit: int) -> Any:
    """The parsed JSON body, refusing more than ``limit`` bytes before parsing anything."""
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            size = int(declared)
        except ValueError:
            raise ApiError(400, "Content-Length is not a number") from None
        if size > limit:
            raise ApiError(413, f"body of {size} bytes exceeds the limit of {limit} bytes")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise ApiError(413, f"body exceeds the limit of {limit} bytes")
    if not body:
        raise ApiError(400, "the body is empty; expected JSON")
    try:
        return json.loads(bytes(body))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ApiError(400, f"the body is not JSON: {exc}") from None


def query_seconds(request: Request, default: float, limit: float) -> float:
    """The ``wait`` query parameter, bounded so no request can hold a slot forever."""
    raw = request.query_params.get("wait")
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value <= limit:
        raise ApiError(
            422,
            "invalid query parameter",
            [{"loc": ["query", "wait"], "msg": f"must be a number from 0 to {limit:g}"}],
        )
    return value
