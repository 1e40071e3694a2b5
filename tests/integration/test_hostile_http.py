"""Hostile HTTP against the real ingest and broker: each refusal a 4xx, nothing published.

What Kafka cannot carry is refused at the edge (413), not retried for ever (503);
what PostgreSQL or the pages cannot hold (NUL, dates out of range, deep nesting)
is a 4xx naming the field; a large but legitimate alert is cut and answered.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from services.ingest.alertmanager import build_chat_request
from tests.integration.test_ingest import AUTH, RequestWatcher, Server, unique_group
from tests.support.stack import StackHandle
from tracebound.errors import RecordTooLarge
from tracebound.publisher import KafkaPublisher

pytestmark = pytest.mark.integration
JSON = {**AUTH, "Content-Type": "application/json"}


@pytest.fixture
def ingest(stack: StackHandle) -> Iterator[httpx.Client]:
    with Server(stack) as client:
        yield client


def test_hostile_requests_are_4xx_and_publish_nothing(
    stack: StackHandle, ingest: httpx.Client
) -> None:
    firing, tag = unique_group("firing_group.json")
    huge = {**firing, "commonAnnotations": {"description": "x" * 1_048_000}}
    resolved = json.loads(json.dumps(firing))
    resolved["status"] = "resolved"
    for alert in resolved["alerts"]:
        alert["status"] = "resolved"
    resolved["alerts"][0]["labels"]["alertname"] = "High\x00CPU"
    ancient = json.loads(json.dumps(firing))
    ancient["alerts"][0]["startsAt"] = "0001-01-01T00:00:00+14:00"
    future = json.loads(json.dumps(firing))
    future["alerts"][0]["endsAt"] = "9999-12-31T23:59:59-14:00"
    nested = b"[" * 2000 + b"]" * 2000
    watcher = RequestWatcher(stack)
    refusals = {
        "a body over the limit": (ingest.post("/api/v1/alerts", json=huge, headers=AUTH), 413),
        "deep nesting": (ingest.post("/api/v1/alerts", content=nested, headers=JSON), 400),
        "NUL in a resolved alertname": (
            ingest.post("/api/v1/alerts", json=resolved, headers=AUTH),
            422,
        ),
        "NUL in groupKey": (
            ingest.post("/api/v1/alerts", json={**firing, "groupKey": "g\x00"}, headers=AUTH),
            422,
        ),
        "year 1": (ingest.post("/api/v1/alerts", json=ancient, headers=AUTH), 422),
        "year 10000": (ingest.post("/api/v1/alerts", json=future, headers=AUTH), 422),
        "a chat as text": (
            ingest.post(
                "/api/v1/chat",
                content=json.dumps({"session_id": tag, "question": "q"}),
                headers={**AUTH, "Content-Type": "text/plain"},
            ),
            415,
        ),
        "NUL in a chat question": (
            ingest.post(
                "/api/v1/chat", json={"session_id": tag, "question": "a\x00"}, headers=AUTH
            ),
            422,
        ),
        "NUL in the run list's q": (ingest.get("/api/v1/runs?q=%00", headers=AUTH), 422),
        "NUL in the dashboard's q": (ingest.get("/?q=%00", headers=AUTH), 422),
        "a rebound host": (ingest.get("/healthz", headers={"Host": "attacker.example"}), 403),
        "a foreign origin": (
            ingest.post(
                "/api/v1/chat",
                json={"session_id": tag, "question": "q"},
                headers={**AUTH, "Origin": "http://attacker.example"},
            ),
            403,
        ),
    }
    codes = {name: reply.status_code for name, (reply, _) in refusals.items()}
    assert codes == {name: code for name, (_, code) in refusals.items()}
    for name, (reply, _) in refusals.items():
        body = reply.json()
        assert body["error"], name
        assert "detail" in body, name
    assert "262144" in refusals["a body over the limit"][0].json()["error"]
    seen = watcher.read(3)
    watcher.close()
    assert [e for e in seen if tag in e.request.requested_by or e.session_id == tag] == []


def test_a_large_alert_is_cut_accepted_and_published(
    stack: StackHandle, ingest: httpx.Client
) -> None:
    firing, _ = unique_group("firing_group.json")
    firing["alerts"][0]["annotations"]["description"] = "d" * 200_000
    firing["alerts"][0]["endsAt"] = "0001-01-01T00:00:00Z"  # Go's zero time: unset
    watcher = RequestWatcher(stack)
    reply = ingest.post("/api/v1/alerts", json=firing, headers=AUTH)
    assert reply.status_code == 200, reply.text
    [run] = reply.json()["runs"]
    seen = watcher.read(3)
    watcher.close()
    [request] = [e for e in seen if e.run_id == run["run_id"]]
    alert = request.request.alerts[0]
    description = alert.annotations["description"]
    assert len(description) == 8192 and description.endswith(" more characters]")
    assert alert.endsAt == ""


def test_kafka_refusing_a_record_for_its_size_reads_as_too_large(stack: StackHandle) -> None:
    # What the webhook answers 413 for: the real producer's error, whichever path reports it.
    event = build_chat_request("x" * 2_000_000, "hostile", "en")
    publisher = KafkaPublisher(stack.kafka)
    try:
        with pytest.raises(RecordTooLarge):
            publisher.publish([event])
    finally:
        publisher.close()
