"""The HTTP edge serves only its own hosts and origins, and only with the token.

Hosts and origins, the token, Basic auth, the sign-in cookie and the connection
bounds: all with injected ports, no broker.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest
from pydantic import SecretStr, ValidationError
from starlette.testclient import TestClient

from services.ingest.runs import RunBuffer
from services.ingest.settings import IngestSettings, load_settings
from tests.support.web_edge import CHAT, edge_client, locs
from tests.unit.test_ingest_http import AUTH, TOKEN, NoDedup, NoPublisher
from tracebound.errors import ConfigError
from web import server
from web.app import Ports, create_app
from web.guard import HostRule, split_host
from web.http import SESSION_S, SIGN_IN_COOKIE, cookie_matches, cookie_value
from web.openapi import build_document

# Hosts and origins


@pytest.mark.parametrize(
    ("headers", "loc"),
    [
        ({"Host": "attacker.example"}, "host"),
        ({"Host": "127.0.0.1:9999"}, "host"),
        ({"Host": ""}, "host"),
        ({"Origin": "http://attacker.example"}, "origin"),
        ({"Origin": "null"}, "origin"),
        ({"Origin": "http://127.0.0.1.attacker.example"}, "origin"),
    ],
)
def test_foreign_hosts_and_origins_are_403(
    refusing: TestClient, headers: dict[str, str], loc: str
) -> None:
    for method, path in (("GET", "/healthz"), ("POST", "/api/v1/chat"), ("POST", "/login")):
        reply = refusing.request(method, path, json=CHAT, headers={**AUTH, **headers})
        assert reply.status_code == 403, (method, path, reply.text)
        assert locs(reply) == [["header", loc]]


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Host": "localhost:8088"},
        {"Host": "[::1]"},
        {"Host": "127.0.0.1:8088", "Origin": "http://127.0.0.1:8088"},
        {"Origin": "http://localhost"},
    ],
)
def test_local_hosts_and_origins_are_served(client: TestClient, headers: dict[str, str]) -> None:
    assert client.post("/api/v1/chat", json=CHAT, headers={**AUTH, **headers}).status_code == 200


def test_allowed_hosts_extend_the_list_and_a_star_drops_the_host_check() -> None:
    extra = "ingest.internal, tracebound.example.com:8443"
    with edge_client(allowed_hosts=extra) as client:
        for host in ("ingest.internal", "ingest.internal:8088", "tracebound.example.com:8443"):
            assert client.get("/healthz", headers={"Host": host}).status_code == 200, host
        assert client.get("/healthz", headers={"Host": "ingest.internal:1"}).status_code == 403
        origin = {"Origin": "https://tracebound.example.com:8443"}
        assert client.get("/healthz", headers=origin).status_code == 200
    with edge_client(allowed_hosts="*") as client:
        proxied = {"Host": "anything.example", "Origin": "https://anything.example"}
        assert client.get("/healthz", headers=proxied).status_code == 200
        foreign = {"Host": "anything.example", "Origin": "https://attacker.example"}
        assert client.get("/healthz", headers=foreign).status_code == 403


def test_the_bound_host_is_allowed_and_port_zero_allows_any_port() -> None:
    rule = HostRule.of("10.0.0.5", 0)
    assert rule.allows("10.0.0.5:41234") and rule.allows("localhost:1")
    assert not rule.allows("10.0.0.6")
    wildcard = HostRule.of("0.0.0.0", 8088)
    assert not wildcard.allows("0.0.0.0:8088") and wildcard.allows("127.0.0.1:8088")
    assert split_host("[::1]:80") == ("::1", 80)
    assert split_host("a:b:c") is None and split_host("host:99999999") is None


# The token and its cookie


@pytest.mark.parametrize("token", ["", " padded", "padded\n"])
def test_an_empty_or_padded_token_is_refused_at_start(
    monkeypatch: pytest.MonkeyPatch, token: str
) -> None:
    monkeypatch.setenv("TRACEBOUND_INGEST_TOKEN", token)
    with pytest.raises(ConfigError) as caught:
        load_settings()
    assert "TRACEBOUND_INGEST_TOKEN" in str(caught.value)
    if token.strip():
        assert token.strip() not in str(caught.value)


def _basic(user: str, password: str) -> dict[str, str]:
    pair = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"Authorization": f"Basic {pair}"}


def test_basic_auth_takes_the_token_as_password(client: TestClient) -> None:
    for user in ("alertmanager", ""):
        reply = client.post("/api/v1/chat", json=CHAT, headers=_basic(user, TOKEN))
        assert reply.status_code == 200
    for headers in (
        _basic(TOKEN, "wrong"),
        _basic("alertmanager", TOKEN + "x"),
        {"Authorization": "Basic !!!"},
        {"Authorization": "Basic " + base64.b64encode(TOKEN.encode()).decode()},
    ):
        assert client.post("/api/v1/chat", json=CHAT, headers=headers).status_code == 401


def test_the_cookie_holds_an_expiring_signature_not_the_token() -> None:
    token = TOKEN.encode()
    value = cookie_value(token, now=1_000)
    expiry, _, signature = value.partition(".")
    assert int(expiry) == 1_000 + SESSION_S and TOKEN not in value
    assert base64.urlsafe_b64encode(token).decode().rstrip("=") not in value
    header = f"{SIGN_IN_COOKIE}={value}".encode()
    assert cookie_matches(header, token, now=1_000)
    assert cookie_matches(header, token, now=1_000 + SESSION_S - 1)
    assert not cookie_matches(header, token, now=1_000 + SESSION_S)  # expired
    assert not cookie_matches(header, b"other-token", now=1_000)
    forged = f"{SIGN_IN_COOKIE}={int(expiry) + 3600}.{signature}".encode()
    assert not cookie_matches(forged, token, now=1_000)
    far = cookie_value(token, now=10**9)
    assert not cookie_matches(f"{SIGN_IN_COOKIE}={far}".encode(), token, now=1_000)


@pytest.mark.parametrize(("scheme", "secure"), [("http", False), ("https", True)])
def test_sign_in_sets_a_strict_http_only_cookie_secure_over_https(
    scheme: str, secure: bool
) -> None:
    ports = Ports(publisher=NoPublisher(), dedup=NoDedup(), runs=RunBuffer(100))
    app = create_app(IngestSettings(token=SecretStr(TOKEN)), ports)
    with TestClient(app, base_url=f"{scheme}://127.0.0.1") as client:
        reply = client.post("/login", data={"token": TOKEN}, follow_redirects=False)
        assert reply.status_code == 303
        cookie = reply.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie
        assert f"Max-Age={SESSION_S}" in cookie
        assert ("Secure" in cookie) is secure
        assert TOKEN not in cookie
        given = {"Cookie": cookie.split(";", 1)[0]}
        assert client.get("/api/v1/runs/r-1/answer?wait=0", headers=given).status_code == 404


# Connections and the document


def test_the_server_bounds_connections_and_idle_time(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}
    monkeypatch.setattr("web.server.uvicorn.run", lambda app, **kw: seen.update(kw))
    monkeypatch.setattr("web.server.logs.configure", lambda *a, **k: None)
    monkeypatch.setattr("web.server.tracing.configure", lambda *a, **k: None)
    monkeypatch.setattr("web.server.tracing.shutdown", lambda *a, **k: None)
    monkeypatch.setattr(server, "report_unknown_variables", lambda *a, **k: None)
    monkeypatch.setattr(server, "create_app", lambda settings: object())
    settings = IngestSettings(max_connections=50, keep_alive_s=7)
    assert server.serve(settings) == 0
    assert seen["limit_concurrency"] == 50 and seen["timeout_keep_alive"] == 7
    assert seen["h11_max_incomplete_event_size"] == settings.max_header_bytes
    assert seen["http"] == "h11"


def test_the_document_names_the_edges_refusals() -> None:
    doc = build_document()
    for path, operations in doc["paths"].items():
        for method, operation in operations.items():
            codes = set(operation["responses"])
            assert {"403", "500"} <= codes, (path, method)
            if any(p["in"] == "query" for p in operation.get("parameters", [])):
                assert "422" in codes, (path, method)
    for path in ("/api/v1/alerts", "/api/v1/chat"):
        assert "415" in doc["paths"][path]["post"]["responses"]
    assert "id" in doc["components"]["schemas"]["ErrorBody"]["properties"]


@pytest.mark.parametrize("entry", ["http://host", "a b", "host/path"])
def test_allowed_hosts_must_be_host_names(entry: str) -> None:
    with pytest.raises(ValidationError):
        IngestSettings(allowed_hosts=entry)
