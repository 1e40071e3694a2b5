"""HTTP plumbing of the API: errors, bearer auth and bounded body reading.

Every refusal is a JSON ``ErrorBody`` with a reason a person can act on, and it
happens before anything is published: the body is size-checked while it is
read (a missing or lying Content-Length cannot get past the limit), then parsed,
then validated.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import time
from collections.abc import Iterable
from typing import Any

from pydantic import SecretStr
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from services.ingest.models import control_character
from tracebound.events.base import RUN_ID

PROTECTED_PREFIX = "/api/v1"
SIGN_IN_COOKIE = "tracebound_token"
SESSION_S = 12 * 3600  # how long a sign-in lasts
SESSION_CONTEXT = "tracebound-session|"
MAX_JSON_DEPTH = 64
JSON_TYPE = "application/json"
# A string (with its escapes) or a bracket: what a depth count has to look at.
_JSON_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')


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
    """Whether an ``Authorization`` header value carries the token (constant-time).

    ``Bearer <token>``, or ``Basic base64(user:token)`` with any user name, which is
    what Alertmanager's ``http_config.basic_auth`` sends.
    """
    scheme, _, given = authorization.partition(b" ")
    if scheme.lower() == b"bearer":
        return hmac.compare_digest(given.strip(), token)
    if scheme.lower() == b"basic":
        try:
            pair = base64.b64decode(given.strip(), validate=True)
        except ValueError:
            return False
        _user, colon, password = pair.partition(b":")
        return bool(colon) and hmac.compare_digest(password, token)
    return False


def _signature(token: bytes, expiry: int) -> str:
    digest = hmac.new(token, f"{SESSION_CONTEXT}{expiry}".encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def cookie_value(token: bytes, now: float | None = None) -> str:
    """The sign-in cookie: ``<expiry>.<HMAC-SHA256 of the expiry under the token>``.

    It proves the token was given without holding it, and it expires after
    :data:`SESSION_S` seconds (the cookie's ``Max-Age`` says the same).
    """
    expiry = int(time.time() if now is None else now) + SESSION_S
    return f"{expiry}.{_signature(token, expiry)}"


def cookie_matches(header: bytes, token: bytes, now: float | None = None) -> bool:
    """Whether a ``Cookie`` header carries an unexpired sign-in cookie of ``token``."""
    moment = time.time() if now is None else now
    for part in header.split(b";"):
        name, _, value = part.strip().partition(b"=")
        if name != SIGN_IN_COOKIE.encode():
            continue
        stamp, dot, given = value.strip().partition(b".")
        if not dot or not stamp.isdigit() or len(stamp) > 12:
            continue
        expiry = int(stamp)
        if moment < expiry <= moment + SESSION_S + 60 and hmac.compare_digest(
            given, _signature(token, expiry).encode()
        ):
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


def json_depth(body: bytes) -> int:
    """How deep the arrays and objects of a JSON text nest, counted without recursion."""
    depth = deepest = 0
    for found in _JSON_TOKENS.finditer(body):
        token = found.group()
        if token in (b"[", b"{"):
            depth += 1
            deepest = max(deepest, depth)
        elif token in (b"]", b"}"):
            depth -= 1
    return deepest


def require_json(request: Request) -> None:
    """415 unless the body is declared ``application/json`` (parameters such as charset allowed).

    A browser cannot send that type cross-site without asking first, so a form or a
    simple ``fetch`` from another site never reaches a handler.
    """
    given = request.headers.get("content-type", "")
    if given.split(";", 1)[0].strip().lower() != JSON_TYPE:
        shown = given.split(";", 1)[0].strip()[:100] or "none"
        raise ApiError(
            415,
            f"the body must be {JSON_TYPE}, not {shown}",
            [{"loc": ["header", "content-type"], "msg": f"expected {JSON_TYPE}"}],
        )


async def read_json(request: Request, limit: int) -> Any:
    """The parsed JSON body, refusing more than ``limit`` bytes before parsing anything.

    Also refused before parsing: a type other than JSON (415) and nesting deeper
    than :data:`MAX_JSON_DEPTH` (400), which no request of ours needs.
    """
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            size = int(declared)
        except ValueError:
            raise ApiError(400, "Content-Length is not a number") from None
        if size > limit:
            raise ApiError(413, f"body of {size} bytes exceeds the limit of {limit} bytes")
    require_json(request)
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise ApiError(413, f"body exceeds the limit of {limit} bytes")
    if not body:
        raise ApiError(400, "the body is empty; expected JSON")
    if json_depth(bytes(body)) > MAX_JSON_DEPTH:
        raise ApiError(400, f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
    try:
        return json.loads(bytes(body))
    except RecursionError:
        raise ApiError(400, f"JSON nested deeper than {MAX_JSON_DEPTH} levels") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ApiError(400, f"the body is not JSON: {exc}") from None


def query_problems(items: Iterable[tuple[str, str]]) -> list[dict[str, Any]]:
    """``{loc, msg}`` of each query parameter (name or value) holding a control character."""
    problems = []
    for name, value in items:
        found = control_character(name) or control_character(value)
        if found is not None:
            problems.append(
                {"loc": ["query", name], "msg": f"control character {found} is not allowed"}
            )
    return problems


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
