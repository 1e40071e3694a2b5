"""The ingest on a real uvicorn server against the real broker, database and pipeline."""

from __future__ import annotations

import copy
import json
import secrets
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
import uvicorn
from pydantic import SecretStr

from services.ingest.alert_topic import AlertTopicReader
from services.ingest.dedup import DedupStore
from services.ingest.runs import EventReader, RunBuffer
from services.ingest.settings import IngestSettings
from tests.support.kafka_io import TopicTail
from tests.support.pipeline import running_pipeline
from tests.support.stack import StackHandle
from tracebound import topics
from tracebound.client import AnswerReader
from tracebound.events import DiagnosisRequested
from tracebound.publisher import KafkaPublisher
from web.app import Ports, create_app

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "alertmanager"
TOKEN = secrets.token_urlsafe(16)
AUTH = {"Authorization": f"Bearer {TOKEN}"}
JSON = {"Content-Type": "application/json"}


class Server:
    """The ingest app on uvicorn; with ``alerts_topic`` it also reads that input topic."""

    def __init__(self, stack: StackHandle, alerts_topic: str = "") -> None:
        settings = IngestSettings(host="127.0.0.1", port=0, token=SecretStr(TOKEN))
        runs = RunBuffer()
        publisher = KafkaPublisher(stack.kafka)
        ports = Ports(
            publisher=publisher,
            dedup=DedupStore(stack.pg_dsn, settings.dedup_window_s),
            runs=runs,
            reader=EventReader(stack.kafka, runs, lookback_s=600),
            alert_topic=AlertTopicReader(
                stack.kafka, alerts_topic, settings.max_body_bytes, publisher.publish
            )
            if alerts_topic
            else None,
        )
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        config = uvicorn.Config(create_app(settings, ports), log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, args=([self.sock],), daemon=True)

    def __enter__(self) -> httpx.Client:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        assert self.server.started, "uvicorn did not start"
        self.client = httpx.Client(base_url=self.url, timeout=150, trust_env=False)
        return self.client

    def __exit__(self, *exc: object) -> None:
        self.client.close()
        self.server.should_exit = True
        self.thread.join(30)
        self.sock.close()


@pytest.fixture
def ingest(stack: StackHandle) -> Iterator[httpx.Client]:
    with Server(stack) as client:
        yield client


class RequestWatcher(TopicTail):
    """``tracebound.requests`` read_committed from the end offsets at construction."""

    def __init__(self, stack: StackHandle) -> None:
        super().__init__(stack.kafka, topics.REQUESTS)

    def read(self, seconds: float) -> list[DiagnosisRequested]:
        """The requests published since construction, after reading ``seconds`` more."""
        time.sleep(seconds)
        return [e for e in self.snapshot() if isinstance(e, DiagnosisRequested)]


def unique_group(name: str) -> tuple[dict[str, Any], str]:
    """A fixture with its own receiver, group key and fingerprints, so reruns never dedupe."""
    data = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    tag = uuid.uuid4().hex[:8]
    data["receiver"] = f"test-{tag}"
    data["groupKey"] += f"/{tag}"
    for alert in data["alerts"]:
        alert["fingerprint"] = alert["fingerprint"][:8] + tag
    return data, tag


def retag(data: dict[str, Any], like: dict[str, Any], tag: str) -> dict[str, Any]:
    out = copy.deepcopy(data)
    out["receiver"], out["groupKey"] = like["receiver"], like["groupKey"]
    for alert in out["alerts"]:
        alert["fingerprint"] = alert["fingerprint"][:8] + tag
    return out


def test_firing_resend_resolved_one_run_answered(
    stack: StackHandle, ingest: httpx.Client, tmp_path: Path
) -> None:
    firing, tag = unique_group("firing_group.json")
    resolved = retag(json.loads((FIXTURES / "resolved_group.json").read_text()), firing, tag)
    grown = retag(json.loads((FIXTURES / "firing_group_grown.json").read_text()), firing, tag)
    watcher = RequestWatcher(stack)
    reader = AnswerReader(stack.kafka)
    with running_pipeline(stack, tmp_path):
        first = ingest.post("/api/v1/alerts", json=firing, headers=AUTH)
        assert first.status_code == 200, first.text
        [run] = first.json()["runs"]
        assert run["deduplicated"] is False
        again = ingest.post("/api/v1/alerts", json=firing, headers=AUTH).json()
        assert again == {"runs": [{"run_id": run["run_id"], "deduplicated": True}], "resolved": 0}
        done = ingest.post("/api/v1/alerts", json=resolved, headers=AUTH).json()
        assert done == {"runs": [], "resolved": 2}
        answers = reader.wait_for({run["run_id"]}, timeout_s=180)
        via_http = ingest.get(f"/api/v1/runs/{run['run_id']}/answer?wait=60", headers=AUTH)
        new = ingest.post("/api/v1/alerts", json=grown, headers=AUTH).json()
    reader.close()
    requests = [
        e for e in watcher.read(3) if e.request.requested_by == f"alertmanager:{firing['receiver']}"
    ]
    watcher.close()
    assert run["run_id"] in answers, "the alert group was not answered on tracebound.answers"
    assert via_http.status_code == 200
    assert via_http.json()["run_id"] == run["run_id"]
    [grown_run] = new["runs"]
    assert grown_run["deduplicated"] is False and grown_run["run_id"] != run["run_id"]
    assert sorted(e.run_id for e in requests) == sorted([run["run_id"], grown_run["run_id"]])
    [request] = [e for e in requests if e.run_id == run["run_id"]]
    assert request.request.mode == "AIOPS"
    assert [a.labels["alertname"] for a in request.request.alerts] == [
        "HighCPUUsage",
        "PodRestarting",
    ]
    with psycopg.connect(stack.pg_dsn) as conn:
        rows = conn.execute(
            "SELECT alertname, service FROM tb_ingest_resolved WHERE fingerprint LIKE %s "
            "ORDER BY alertname",
            (f"%{tag}",),
        ).fetchall()
    assert rows == [("HighCPUUsage", "payment-service"), ("PodRestarting", "payment-service")]


def test_chat_answer_and_event_stream(
    stack: StackHandle, ingest: httpx.Client, tmp_path: Path
) -> None:
    body = {"session_id": "itest", "question": "payment-service 当前是否有 HighCPUUsage 告警？"}
    with running_pipeline(stack, tmp_path):
        accepted = ingest.post("/api/v1/chat", json=body, headers=AUTH)
        assert accepted.status_code == 200, accepted.text
        run_id = accepted.json()["run_id"]
        kinds: list[str] = []
        with ingest.stream("GET", f"/api/v1/runs/{run_id}/events?wait=120", headers=AUTH) as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            for line in stream.iter_lines():
                if line.startswith("event: "):
                    kinds.append(line[7:])
        answer = ingest.get(f"/api/v1/runs/{run_id}/answer?wait=30", headers=AUTH)
    assert answer.status_code == 200
    text = answer.json()["user_facing_answer"]
    assert "payment-service" in text and "92%" in text
    assert kinds[0] == "DiagnosisRequested"
    assert "PlanProduced" in kinds and "Verdict" in kinds
    assert kinds[-1] == "Answer" and kinds.count("Answer") == 1


def test_invalid_requests_publish_nothing(stack: StackHandle, ingest: httpx.Client) -> None:
    firing, _ = unique_group("firing_group.json")
    missing = {k: v for k, v in firing.items() if k != "alerts"}
    wrong = {**firing, "alerts": [{**firing["alerts"][0], "labels": {"alertname": 3}}]}
    watcher = RequestWatcher(stack)
    refusals = [
        ingest.post("/api/v1/alerts", content=b"{not json", headers={**AUTH, **JSON}),
        ingest.post("/api/v1/alerts", json=wrong, headers=AUTH),
        ingest.post("/api/v1/alerts", json=missing, headers=AUTH),
        ingest.post(
            "/api/v1/alerts", content=b"[" + b" " * (1024 * 1024) + b"]", headers={**AUTH, **JSON}
        ),
        ingest.post("/api/v1/alerts", json=firing),
        ingest.post("/api/v1/alerts", json=firing, headers={"Authorization": "Bearer no"}),
        ingest.post("/api/v1/chat", json={"session_id": "s", "question": ""}, headers=AUTH),
    ]
    assert [r.status_code for r in refusals] == [400, 422, 422, 413, 401, 401, 422]
    assert all(r.json()["error"] for r in refusals)
    sentinel = ingest.post("/api/v1/alerts", json=firing, headers=AUTH).json()
    [run] = sentinel["runs"]
    seen = watcher.read(5)
    watcher.close()
    ours = [e for e in seen if e.producer.service == "ingest"]
    assert [e.run_id for e in ours] == [run["run_id"]], "a refused request was published"
