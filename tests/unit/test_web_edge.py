"""The HTTP edge refuses what the pipeline cannot carry, each time with a 4xx naming why.

Sizes, nesting, control characters, dates, content types, hosts and origins, the
token and its cookie, and the JSON 500: all with injected ports, no broker.
"""

from __future__ import annotations

import base64
import copy
import json
import logging
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
from pydantic import SecretStr, ValidationError
from starlette.testclient import TestClient

from services.ingest.alertmanager import AlertGroup
from services.ingest.dedup import Claimed
from services.ingest.models import MAX_ANNOTATION_CHARS, MAX_LABEL_CHARS, WebhookAlert
from services.ingest.runs import RunBuffer
from services.ingest.settings import IngestSettings, load_settings
from tests.unit.test_ingest_http import AUTH, AUTH_JSON, FIRING, TOKEN, NoDedup, NoPublisher
from tracebound.errors import ConfigError, RecordTooLarge, TransientError
from tracebound.events import Alert, AlertsResolved, DiagnosisRequested, Event
from web import server
from web.app import Ports, create_app
from web.guard import HostRule, split_host
from web.http import SESSION_S, SIGN_IN_COOKIE, cookie_matches, cookie_value, json_depth
from web.openapi import build_document

CHAT = {"session_id": "s-1", "question": "payment-service HighCPUUsage?"}


class Recorder(NoPublisher):
    """Acknowledges everything and keeps it."""


class Refusing(NoPublisher):
    """A broker that refuses with ``error``, the way the Kafka publisher reports it."""

    def __init__(self, error: TransientError | RecordTooLarge) -> None:
        super().__init__()
        self.error = error

    def publish(self, events: Sequence[Event]) -> None:
        raise self.error


class Crashing(NoPublisher):
    def publish(self, events: Sequence[Event]) -> None:
        raise RuntimeError("a bug")


class Claiming(NoDedup):
    """Every group is new: its request is published."""

    def claim(
        self,
        group: AlertGroup,
        request: DiagnosisRequested,
        publish: Callable[[DiagnosisRequested], None],
    ) -> Claimed:
        publish(request)
        return Claimed(request.run_id, deduplicated=False)

    def record_resolved(
        self,
        alerts: Sequence[Alert],
        requested_by: str,
        publish: Callable[[list[AlertsResolved]], None],
    ) -> int:
        return len(alerts)


def _client(publisher: NoPublisher | None = None, **settings: Any) -> TestClient:
    ports = Ports(publisher=publisher or NoPublisher(), dedup=Claiming(), runs=RunBuffer(100))
    app = create_app(IngestSettings(**{"token": SecretStr(TOKEN), **settings}), ports)
    return TestClient(app, base_url="http://127.0.0.1")


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def client(recorder: Recorder) -> Iterator[TestClient]:
    with _client(recorder) as client:
        yield client


@pytest.fixture
def refusing() -> Iterator[TestClient]:
    """A client whose every request must be refused before anything is published."""
    publisher = NoPublisher()
    ports = Ports(publisher=publisher, dedup=NoDedup(), runs=RunBuffer(100))
    app = create_app(IngestSettings(token=SecretStr(TOKEN)), ports)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        yield client
    assert publisher.published == [], "a refused request published something"


def firing() -> dict[str, Any]:
    return copy.deepcopy(json.loads(FIRING))


def _locs(reply: Any) -> list[list[Any]]:
    return [d["loc"] for d in reply.json()["detail"]]


# Sizes


def test_the_default_body_limit_leaves_room_in_a_kafka_message() -> None:
    settings = IngestSettings()
    assert settings.max_body_bytes == 256 * 1024
    assert IngestSettings(max_body_bytes=512 * 1024).max_body_bytes == 512 * 1024
    with pytest.raises(ValidationError):
        IngestSettings(max_body_bytes=1024 * 1024)  # a request event could not hold it


def test_a_body_over_the_default_limit_is_413_naming_it(refusing: TestClient) -> None:
    body = json.dumps({**CHAT, "question": "x" * 1_048_000})
    reply = refusing.post("/api/v1/chat", content=body, headers=AUTH_JSON)
    assert reply.status_code == 413
    assert "limit of 262144 bytes" in reply.json()["error"]


def test_long_fields_are_cut_with_a_marker_and_the_alert_is_accepted(
    client: TestClient, recorder: Recorder
) -> None:
    data = firing()
    alert = data["alerts"][0]
    alert["annotations"]["description"] = "d" * 200_000
    alert["labels"]["pod"] = "p" * 5000
    alert["generatorURL"] = "http://prometheus/graph?g0.expr=" + "u" * 9000
    data["externalURL"] = "http://alertmanager/" + "e" * 9000
    data["groupKey"] = "{}:{alertname=" + "k" * 9000 + "}"
    reply = client.post("/api/v1/alerts", json=data, headers=AUTH)
    assert reply.status_code == 200, reply.text
    (request,) = recorder.published
    assert isinstance(request, DiagnosisRequested)
    carried = request.request.alerts[0]
    description = carried.annotations["description"]
    assert len(description) == MAX_ANNOTATION_CHARS
    assert description.startswith("ddd") and description.endswith(" more characters]")
    assert "[cut: " in description
    assert len(carried.labels["pod"]) == MAX_LABEL_CHARS and "[cut: " in carried.labels["pod"]
    assert len(carried.generatorURL) == 4096
    assert len(request.to_json()) < 64 * 1024  # well inside one Kafka message


def test_a_record_too_large_for_kafka_is_413_not_503() -> None:
    publisher = Refusing(RecordTooLarge("Kafka refused a record for its size"))
    with _client(publisher) as client:
        reply = client.post("/api/v1/chat", json=CHAT, headers=AUTH)
    assert reply.status_code == 413 and "Retry-After" not in reply.headers
    assert "too large" in reply.json()["error"]


def test_other_kafka_trouble_stays_503() -> None:
    publisher = Refusing(TransientError("Kafka did not acknowledge: timeout"))
    with _client(publisher) as client:
        reply = client.post("/api/v1/chat", json=CHAT, headers=AUTH)
    assert reply.status_code == 503 and reply.headers["Retry-After"] == "5"


# Nesting


def test_depth_is_counted_without_recursion_and_ignores_strings() -> None:
    assert json_depth(b"[" * 100_000 + b"]" * 100_000) == 100_000
    assert json_depth(b'{"a": "[[[[{{{{\\"[[["}') == 1
    assert json_depth(b'[[{"a": [1]}]]') == 4


@pytest.mark.parametrize("path", ["/api/v1/alerts", "/api/v1/chat"])
@pytest.mark.parametrize("opening", [b"[", b'{"a":'])
def test_deep_nesting_is_400_not_500(refusing: TestClient, path: str, opening: bytes) -> None:
    closing = b"]" if opening == b"[" else b"}"
    body = opening * 2000 + b"1" + closing * 2000
    reply = refusing.post(path, content=body, headers=AUTH_JSON)
    assert reply.status_code == 400
    assert reply.json()["error"] == "JSON nested deeper than 64 levels"


def test_nesting_within_the_limit_reaches_validation(refusing: TestClient) -> None:
    body = b"[" * 64 + b"]" * 64
    assert refusing.post("/api/v1/chat", content=body, headers=AUTH_JSON).status_code == 422


# Control characters


@pytest.mark.parametrize(
    ("change", "loc"),
    [
        (lambda d: d["alerts"][0]["labels"].update(alertname="High\x00CPU"), "alertname"),
        (lambda d: d.update(groupKey="{}:\x00"), "groupKey"),
        (lambda d: d.update(receiver="team\x07"), "receiver"),
        (lambda d: d["alerts"][0]["labels"].update({"na\x00me": "v"}), "[key]"),
        (lambda d: d["alerts"][0]["annotations"].update(summary="a\x1bb"), "summary"),
        (lambda d: d["commonLabels"].update(team="\x00"), "team"),
        (lambda d: d.update(externalURL="http://a/\x00"), "externalURL"),
    ],
)
def test_control_characters_in_webhooks_are_422_naming_the_field(
    refusing: TestClient, change: Callable[[dict[str, Any]], None], loc: str
) -> None:
    data = firing()
    data["alerts"][0]["status"] = "resolved"
    change(data)
    reply = refusing.post("/api/v1/alerts", json=data, headers=AUTH)
    assert reply.status_code == 422, reply.text
    (problem,) = reply.json()["detail"]
    assert problem["loc"][-1] == loc and "control character" in problem["msg"]


@pytest.mark.parametrize("field", ["question", "session_id"])
def test_control_characters_in_chat_are_422(refusing: TestClient, field: str) -> None:
    reply = refusing.post("/api/v1/chat", json={**CHAT, field: "why\x00"}, headers=AUTH)
    assert reply.status_code == 422 and _locs(reply) == [[field]]


def test_tabs_and_line_breaks_are_text(client: TestClient) -> None:
    body = {**CHAT, "question": "line one\n\tline two\r\n"}
    assert client.post("/api/v1/chat", json=body, headers=AUTH).status_code == 200


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/runs?q=%00",
        "/?q=a%00b",
        "/reports?before=%01",
        "/api/v1/runs/r-1/answer?wait=1&x%00=1",
        "/runs/r-1?q=%1f",
    ],
)
def test_control_characters_in_query_parameters_are_422(refusing: TestClient, path: str) -> None:
    reply = refusing.get(path, headers=AUTH)
    assert reply.status_code == 422
    assert reply.json()["detail"][0]["loc"][0] == "query"
    assert "control character" in reply.json()["detail"][0]["msg"]


# Dates


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("startsAt", "0001-01-01T00:00:00+14:00"),
        ("endsAt", "9999-12-31T23:59:59-14:00"),
        ("endsAt", "2199-12-31T23:59:59-14:00"),  # 2200-01-01T13:59Z
        ("startsAt", "1970-01-01T00:30:00+01:00"),  # 1969 in UTC
        ("startsAt", "2024-02-30T00:00:00Z"),
        ("startsAt", "2024-01-01T00:00:00+25:00"),
    ],
)
def test_dates_outside_the_window_are_422_naming_field_and_window(
    refusing: TestClient, field: str, value: str
) -> None:
    data = firing()
    data["alerts"][0][field] = value
    reply = refusing.post("/api/v1/alerts", json=data, headers=AUTH)
    assert reply.status_code == 422
    (problem,) = reply.json()["detail"]
    assert problem["loc"] == ["alerts", 0, field]
    if value[:4] in ("0001", "9999", "2199", "1970"):
        assert "1970-01-01 to 2200-01-01 UTC" in problem["msg"]


def test_gos_zero_time_means_unset(client: TestClient, recorder: Recorder) -> None:
    data = firing()
    data["alerts"][0]["endsAt"] = "0001-01-01T00:00:00Z"
    assert client.post("/api/v1/alerts", json=data, headers=AUTH).status_code == 200
    (request,) = recorder.published
    assert isinstance(request, DiagnosisRequested)
    assert request.request.alerts[0].endsAt == ""


def test_dates_at_the_window_edges() -> None:
    def alert(at: str) -> WebhookAlert:
        return WebhookAlert(status="firing", labels={"alertname": "a"}, startsAt=at)

    assert alert("1970-01-01T00:00:00Z").startsAt == "1970-01-01T00:00:00Z"
    assert alert("2199-12-31T23:59:59.999999999Z").startsAt.startswith("2199")
    assert alert("").startsAt == ""
    with pytest.raises(ValidationError):
        alert("2200-01-01T00:00:00Z")
    with pytest.raises(ValidationError):
        alert("2024-01-01T00:00:00Z\n")


# Content types


@pytest.mark.parametrize("path", ["/api/v1/alerts", "/api/v1/chat"])
@pytest.mark.parametrize(
    "content_type",
    [None, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"],
)
def test_bodies_not_declared_json_are_415(
    refusing: TestClient, path: str, content_type: str | None
) -> None:
    headers = dict(AUTH)
    if content_type:
        headers["Content-Type"] = content_type
    reply = refusing.post(path, content=json.dumps(CHAT), headers=headers)
    assert reply.status_code == 415
    assert "application/json" in reply.json()["error"]
    assert _locs(reply) == [["header", "content-type"]]


def test_json_with_a_charset_is_json(client: TestClient) -> None:
    headers = {**AUTH, "Content-Type": "Application/JSON; charset=utf-8"}
    assert client.post("/api/v1/chat", content=json.dumps(CHAT), headers=headers).status_code == 200


# The JSON 500


def test_an_unexpected_error_is_a_json_500_with_an_id_in_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with _client(Crashing()) as client, caplog.at_level(logging.ERROR, logger="web.guard"):
        reply = client.post("/api/v1/chat", json=CHAT, headers=AUTH)
    assert reply.status_code == 500
    body = reply.json()
    assert body["error"] == "internal error" and body["detail"] == []
    assert len(body["id"]) == 12
    (record,) = [r for r in caplog.records if body["id"] in r.getMessage()]
    assert record.exc_info is not None and "a bug" in str(record.exc_info[1])
    assert "a bug" not in reply.text


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
        assert _locs(reply) == [["header", loc]]


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
    with _client(allowed_hosts=extra) as client:
        for host in ("ingest.internal", "ingest.internal:8088", "tracebound.example.com:8443"):
            assert client.get("/healthz", headers={"Host": host}).status_code == 200, host
        assert client.get("/healthz", headers={"Host": "ingest.internal:1"}).status_code == 403
        origin = {"Origin": "https://tracebound.example.com:8443"}
        assert client.get("/healthz", headers=origin).status_code == 200
    with _client(allowed_hosts="*") as client:
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


def _cursor(at: str, run_id: str) -> str:
    raw = json.dumps([at, run_id]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@pytest.mark.parametrize(
    ("param", "value"),
    [
        ("since", "0001-01-01T00:00:00+14:00"),
        ("until", "9999-12-31T23:59:59-14:00"),
        ("cursor", _cursor("2024-01-01T00:00:00+00:00", "run\x00")),
        ("cursor", _cursor("0001-01-01T00:00:00+14:00", "run-1")),
    ],
)
def test_run_list_times_and_cursors_outside_what_the_database_holds_are_400(
    refusing: TestClient, param: str, value: str
) -> None:
    reply = refusing.get("/api/v1/runs", params={param: value}, headers=AUTH)
    assert reply.status_code == 400
    assert _locs(reply) == [["query", param]]
    page = refusing.get("/", params={param: value}, headers=AUTH)
    assert page.status_code == 400 and param in page.text
