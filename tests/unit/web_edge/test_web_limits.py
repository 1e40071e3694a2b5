"""The HTTP edge refuses what the pipeline cannot carry, each time with a 4xx naming why.

Sizes, nesting, control characters, dates, content types, run-list cursors and the
JSON 500: all with injected ports, no broker.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import ValidationError
from starlette.testclient import TestClient

from services.ingest.models import MAX_ANNOTATION_CHARS, MAX_LABEL_CHARS, WebhookAlert
from services.ingest.settings import IngestSettings
from tests.support.web_edge import CHAT, Crashing, Recorder, Refusing, edge_client, firing, locs
from tests.unit.test_ingest_http import AUTH, AUTH_JSON
from tracebound.errors import RecordTooLarge, TransientError
from tracebound.events import DiagnosisRequested
from web.http import json_depth

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
    with edge_client(publisher) as client:
        reply = client.post("/api/v1/chat", json=CHAT, headers=AUTH)
    assert reply.status_code == 413 and "Retry-After" not in reply.headers
    assert "too large" in reply.json()["error"]


def test_other_kafka_trouble_stays_503() -> None:
    publisher = Refusing(TransientError("Kafka did not acknowledge: timeout"))
    with edge_client(publisher) as client:
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
    assert reply.status_code == 422 and locs(reply) == [[field]]


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
    assert locs(reply) == [["header", "content-type"]]


def test_json_with_a_charset_is_json(client: TestClient) -> None:
    headers = {**AUTH, "Content-Type": "Application/JSON; charset=utf-8"}
    assert client.post("/api/v1/chat", content=json.dumps(CHAT), headers=headers).status_code == 200


# The JSON 500


def test_an_unexpected_error_is_a_json_500_with_an_id_in_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with edge_client(Crashing()) as client, caplog.at_level(logging.ERROR, logger="web.guard"):
        reply = client.post("/api/v1/chat", json=CHAT, headers=AUTH)
    assert reply.status_code == 500
    body = reply.json()
    assert body["error"] == "internal error" and body["detail"] == []
    assert len(body["id"]) == 12
    (record,) = [r for r in caplog.records if body["id"] in r.getMessage()]
    assert record.exc_info is not None and "a bug" in str(record.exc_info[1])
    assert "a bug" not in reply.text


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
    assert locs(reply) == [["query", param]]
    page = refusing.get("/", params={param: value}, headers=AUTH)
    assert page.status_code == 400 and param in page.text
