"""The ingest API's refusals and read paths, with no broker: nothing may be published."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr
from starlette.testclient import TestClient

from services.ingest.alertmanager import AlertGroup
from services.ingest.dedup import Claimed
from services.ingest.runs import RunBuffer
from services.ingest.settings import IngestSettings
from tests.support.samples import sample
from tracebound.events import (
    Alert,
    AlertsResolved,
    Answer,
    DiagnosisRequested,
    Event,
    PlanProduced,
)
from web.app import Ports, create_app

FIRING = (
    Path(__file__).resolve().parents[1] / "fixtures/alertmanager/firing_group.json"
).read_text()
TOKEN = "s3cret-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
JSON = {"Content-Type": "application/json"}
AUTH_JSON = {**AUTH, **JSON}


class NoPublisher:
    def __init__(self) -> None:
        self.published: list[Event] = []

    def publish(self, events: Sequence[Event]) -> None:
        self.published.extend(events)

    def close(self) -> None:
        pass


class NoDedup:
    def __init__(self) -> None:
        self.calls = 0

    def ensure_schema(self) -> None:
        pass

    def claim(
        self,
        group: AlertGroup,
        request: DiagnosisRequested,
        publish: Callable[[DiagnosisRequested], None],
    ) -> Claimed:
        self.calls += 1
        raise AssertionError("an invalid request reached the dedup store")

    def record_resolved(
        self,
        alerts: Sequence[Alert],
        requested_by: str,
        publish: Callable[[list[AlertsResolved]], None],
    ) -> int:
        self.calls += 1
        raise AssertionError("an invalid request reached the dedup store")


@pytest.fixture
def ports() -> Ports:
    return Ports(publisher=NoPublisher(), dedup=NoDedup(), runs=RunBuffer(100))


def client_for(ports: Ports, **settings: Any) -> Iterator[TestClient]:
    app = create_app(IngestSettings(**settings), ports)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        yield client
    publisher = ports.publisher
    assert isinstance(publisher, NoPublisher)
    assert publisher.published == [], "a refused request published something"


@pytest.fixture
def client(ports: Ports) -> Iterator[TestClient]:
    yield from client_for(ports, token=SecretStr(TOKEN), max_body_bytes=4096)


@pytest.fixture
def open_client(ports: Ports) -> Iterator[TestClient]:
    yield from client_for(ports, token=None)


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": f"Basic {TOKEN}"},
        {"Authorization": ""},
    ],
)
@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/api/v1/alerts"),
        ("POST", "/api/v1/chat"),
        ("GET", "/api/v1/runs/abc/answer"),
        ("GET", "/api/v1/runs/abc/events"),
    ],
)
def test_api_needs_the_token(
    client: TestClient, headers: dict[str, str], method: str, path: str
) -> None:
    reply = client.request(method, path, content=FIRING, headers=headers)
    assert reply.status_code == 401
    assert reply.headers["WWW-Authenticate"].startswith("Bearer")
    assert TOKEN not in reply.text
    assert reply.json()["error"] == "missing or invalid bearer token"


def test_health_and_openapi_stay_open(client: TestClient) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    assert client.get("/openapi.json").json()["openapi"] == "3.1.0"


def test_without_a_token_the_api_is_open(open_client: TestClient) -> None:
    assert open_client.post("/api/v1/chat", content="{", headers=JSON).status_code == 400


@pytest.mark.parametrize("path", ["/api/v1/alerts", "/api/v1/chat"])
def test_oversized_bodies_are_refused_by_their_length(client: TestClient, path: str) -> None:
    reply = client.post(path, content=b"[" + b" " * 5000 + b"]", headers=AUTH_JSON)
    assert reply.status_code == 413
    assert "exceeds the limit of 4096 bytes" in reply.json()["error"]


def test_oversized_streams_without_a_length_are_refused_while_read(client: TestClient) -> None:
    def chunks() -> Iterator[bytes]:
        for _ in range(10):
            yield b" " * 1000

    reply = client.post("/api/v1/alerts", content=chunks(), headers=AUTH_JSON)
    assert reply.status_code == 413


@pytest.mark.parametrize("body", [b"not json", b'{"alerts": [', b"", b"\xff\xfe"])
def test_non_json_is_400(client: TestClient, body: bytes) -> None:
    reply = client.post("/api/v1/alerts", content=body, headers=AUTH_JSON)
    assert reply.status_code == 400
    assert reply.json()["error"]


def test_schema_errors_are_422_with_locations(client: TestClient) -> None:
    data = json.loads(FIRING)
    del data["alerts"]
    data["status"] = 7
    reply = client.post("/api/v1/alerts", json=data, headers=AUTH)
    assert reply.status_code == 422
    body = reply.json()
    locs = [d["loc"] for d in body["detail"]]
    assert ["alerts"] in locs and ["status"] in locs
    assert all(set(d) == {"loc", "msg"} for d in body["detail"])


@pytest.mark.parametrize(
    "body",
    [[1, 2], {"session_id": "s"}, {"session_id": "s", "question": "q", "language": "de"}],
)
def test_chat_schema_errors_are_422(client: TestClient, body: Any) -> None:
    reply = client.post("/api/v1/chat", json=body, headers=AUTH)
    assert reply.status_code == 422 and reply.json()["detail"]


@pytest.mark.parametrize("wait", ["-1", "nan", "soon", "1000"])
def test_wait_is_bounded(client: TestClient, wait: str) -> None:
    reply = client.get(f"/api/v1/runs/abc/answer?wait={wait}", headers=AUTH)
    assert reply.status_code == 422
    assert reply.json()["detail"][0]["loc"] == ["query", "wait"]


def test_bad_run_ids_are_422(client: TestClient) -> None:
    reply = client.get("/api/v1/runs/" + "x" * 200 + "/answer", headers=AUTH)
    assert reply.status_code == 422


def test_unknown_routes_answer_json(client: TestClient) -> None:
    reply = client.get("/api/v1/nothing", headers=AUTH)
    assert reply.status_code == 404 and reply.json()["error"]
    assert client.get("/api/v1/chat", headers=AUTH).status_code == 405


def _events(run_id: str, cause: str | None = None) -> tuple[PlanProduced, Answer]:
    plan = sample(PlanProduced).model_copy(
        update={"run_id": run_id, "event_id": "e-plan", "causation_id": cause}
    )
    answer = sample(Answer).model_copy(
        update={"run_id": run_id, "event_id": "e-answer", "causation_id": "e-plan"}
    )
    return plan, answer


def test_answers_come_from_the_buffer(ports: Ports, client: TestClient) -> None:
    assert client.get("/api/v1/runs/r-1/answer?wait=0", headers=AUTH).status_code == 404
    plan, answer = _events("r-1")
    ports.runs.add(plan)
    pending = client.get("/api/v1/runs/r-1/answer?wait=0", headers=AUTH)
    assert pending.status_code == 202
    assert pending.json() == {"run_id": "r-1", "status": "running", "events": 1}
    ports.runs.add(answer)
    reply = client.get("/api/v1/runs/r-1/answer?wait=0", headers=AUTH)
    assert reply.status_code == 200 and reply.json() == answer.to_json()


def test_event_stream_replays_the_run_and_ends_with_its_answer(
    ports: Ports, client: TestClient
) -> None:
    plan, answer = _events("r-2")
    for event in (plan, plan, answer):  # a re-read event is sent once
        ports.runs.add(event)
    with client.stream("GET", "/api/v1/runs/r-2/events", headers=AUTH) as reply:
        assert reply.headers["content-type"].startswith("text/event-stream")
        text = "".join(reply.iter_text())
    kinds = [line.split(": ", 1)[1] for line in text.splitlines() if line.startswith("event:")]
    assert kinds == ["PlanProduced", "Answer"]
    datas = [line[6:] for line in text.splitlines() if line.startswith("data: ")]
    assert json.loads(datas[-1])["run_id"] == "r-2"


def test_event_stream_of_an_unknown_run_times_out(client: TestClient) -> None:
    with client.stream("GET", "/api/v1/runs/r-3/events?wait=0", headers=AUTH) as reply:
        text = "".join(reply.iter_text())
    assert "event: timeout" in text


def test_a_run_accepted_here_streams_its_request_first() -> None:
    # The reader may reach a later stage's topic before the requests topic; what this
    # process published and the broker acknowledged is buffered at once.
    publisher = Publishing()
    ports = Ports(publisher=publisher, dedup=NoDedup(), runs=RunBuffer(100))
    app = create_app(IngestSettings(token=SecretStr(TOKEN)), ports)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        body = {"session_id": "s", "question": "payment-service 当前是否有 HighCPUUsage 告警？"}
        run_id = client.post("/api/v1/chat", json=body, headers=AUTH).json()["run_id"]
        (request,) = publisher.published
        plan, answer = _events(run_id, cause=request.event_id)
        later = request.occurred_at + timedelta(seconds=1)
        for event in (plan, answer):
            ports.runs.add(event.model_copy(update={"occurred_at": later}))
        with client.stream("GET", f"/api/v1/runs/{run_id}/events", headers=AUTH) as reply:
            text = "".join(reply.iter_text())
    kinds = [line.split(": ", 1)[1] for line in text.splitlines() if line.startswith("event:")]
    assert kinds == ["DiagnosisRequested", "PlanProduced", "Answer"]


class Publishing(NoPublisher):
    """Acknowledges everything, like a healthy broker."""
