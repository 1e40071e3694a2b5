"""The edge of the HTTP API: which hosts and origins may talk to it, and the last-resort 500.

A request is answered only when its ``Host`` header names this server (the bind
address, the loopback names, or ``TRACEBOUND_INGEST_ALLOWED_HOSTS``), which defeats
DNS rebinding, and when its ``Origin`` (sent by browsers) is one of those hosts or
the request's own host, which refuses cross-site requests. Query parameters with
control characters are refused here for every route, and an unexpected exception
becomes a JSON 500 with an id that the log line shares.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlsplit

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from web.http import ApiError, error_response, query_problems

log = logging.getLogger(__name__)
ANY_HOST = "*"
LOOPBACK = ("127.0.0.1", "localhost", "::1")
WILDCARDS = ("", "0.0.0.0", "::")  # noqa: S104 - bind addresses, not hosts to reach


def split_host(value: str) -> tuple[str, int | None] | None:
    """``host[:port]`` (IPv6 in brackets) as a lower-case host and a port; None if malformed."""
    text = value.strip().lower()
    if text.startswith("["):
        host, bracket, rest = text[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            return None
        port_text = rest[1:] if rest else ""
    else:
        host, _, port_text = text.partition(":")
        if ":" in port_text:
            return None
    if not host:
        return None
    if not port_text:
        return host, None
    if not port_text.isascii() or not port_text.isdigit() or len(port_text) > 5:
        return None
    return host, int(port_text)


@dataclass(frozen=True, slots=True)
class HostRule:
    """The ``host[:port]`` values this server answers as.

    Each name may come without a port or with the configured one (any port when
    the server binds port 0); an allowed ``name:port`` entry also admits that port.
    """

    names: frozenset[tuple[str, int | None]]
    port: int
    any_host: bool = False

    @classmethod
    def of(cls, bound: str, port: int, extra: Iterable[str] = ()) -> HostRule:
        names: set[tuple[str, int | None]] = {(name, None) for name in LOOPBACK}
        if bound.strip().lower() not in WILDCARDS:
            names.add((bound.strip().lower().strip("[]"), None))
        any_host = False
        for entry in (e.strip() for e in extra):
            if entry == ANY_HOST:
                any_host = True
            elif entry:
                bare_v6 = entry.count(":") > 1 and not entry.startswith("[")
                parsed = (entry.lower(), None) if bare_v6 else split_host(entry)
                if parsed is None:
                    raise ValueError(f"not a host name or host:port: {entry!r}")
                names.add(parsed)
        return cls(frozenset(names), port, any_host)

    def allows(self, value: str) -> bool:
        """Whether a ``host[:port]`` is one this server answers as."""
        parsed = split_host(value)
        if parsed is None:
            return False
        host, port = parsed
        if port is None or self.port in (0, port):
            return any(name == host for name, _ in self.names)
        return (host, port) in self.names


def _origin_host(origin: str) -> str | None:
    """The ``host[:port]`` of an ``Origin`` header; None for ``null`` or a malformed one."""
    try:
        parts = urlsplit(origin.strip())
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.netloc or "@" in parts.netloc:
        return None
    return parts.netloc


def _refusal(status: int, error: str, loc: list[str | int], msg: str) -> ApiError:
    return ApiError(status, error, [{"loc": loc, "msg": msg}])


def check_request(rule: HostRule, scope: Scope) -> ApiError | None:
    """The refusal of a request by its ``Host``, ``Origin`` or query string, if any."""
    headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in scope["headers"]}
    host = headers.get("host", "")
    if not rule.any_host and not rule.allows(host):
        return _refusal(
            403,
            "the Host header does not name this server",
            ["header", "host"],
            "add the name to TRACEBOUND_INGEST_ALLOWED_HOSTS to serve it",
        )
    origin = headers.get("origin")
    if origin is not None:
        seen = _origin_host(origin)
        same = seen is not None and split_host(seen) == split_host(host)
        if seen is None or not (same or rule.allows(seen)):
            return _refusal(
                403,
                "the Origin header names another site",
                ["header", "origin"],
                "cross-site requests are refused",
            )
    query = scope.get("query_string", b"").decode("latin-1")
    problems = query_problems(parse_qsl(query, keep_blank_values=True))
    if problems:
        return ApiError(422, "a query parameter holds a control character", problems)
    return None


class EdgeGuard:
    """ASGI middleware: :func:`check_request` before anything else, and the JSON 500.

    An exception that escapes a route is logged with its traceback and a short id;
    the client gets ``{"error": "internal error", "detail": [], "id": ...}``. Once a
    response (an event stream) has started, it can only be cut off.
    """

    def __init__(self, app: ASGIApp, rule: HostRule) -> None:
        self.app = app
        self.rule = rule

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = check_request(self.rule, scope)
        if refusal is not None:
            await error_response(refusal)(scope, receive, send)
            return
        started = False

        async def sending(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except Exception:
            if started:
                raise
            error_id = secrets.token_hex(6)
            log.exception(
                "internal error %s in %s %s",
                error_id,
                scope.get("method"),
                scope.get("path"),
                extra={"error_id": error_id},
            )
            body = {"error": "internal error", "detail": [], "id": error_id}
            await JSONResponse(body, status_code=500)(scope, receive, send)
