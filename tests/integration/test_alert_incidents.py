"""Alerts as incidents on the real stack: the alerts topic (written by kcat) and resolutions.

The alerts topic is read by the ingest's own consumer group; kcat (Debian's
``kafkacat``) stands for any producer that publishes Alertmanager JSON. A
resolution followed by a new firing of the same alerts is a new incident, and the
resolution is recorded on the run it resolves (event, read model, trace).
"""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from projections.run_list import list_runs
from projections.trace import build_trace
from services.ingest.alertmanager import build_request, firing_groups, parse_document
from services.ingest.dedup import Claimed, DedupStore
from tests.integration.test_ingest import (
    AUTH,
    FIXTURES,
    RequestWatcher,
    Server,
    retag,
    unique_group,
)
from tests.support.kafka_io import TopicTail
from tests.support.pipeline import running_pipeline
from tests.support.projection import Projection
from tests.support.stack import StackHandle
from tracebound import topics
from tracebound.client import AnswerReader
from tracebound.errors import TransientError
from tracebound.events import AlertsResolved, DeadLetter, DiagnosisRequested
from tracebound.stack.apt import ensure_binary


def kcat_produce(stack: StackHandle, key: str, files: list[Path], log: Path) -> None:
    """Each file one record on the alerts topic, keyed ``key`` (so one partition, in order)."""
    kcat = ensure_binary("kcat", "kafkacat", log)
    command = [kcat, "-P", "-b", stack.bootstrap, "-t", topics.ALERTS, "-k", key]
    subprocess.run([*command, *map(str, files)], check=True, timeout=60)


def test_kcat_records_become_one_answered_run_and_poison_is_dead_lettered(
    stack: StackHandle, tmp_path: Path
) -> None:
    firing, tag = unique_group("firing_group.json")
    record = tmp_path / "firing.json"
    record.write_text(json.dumps(firing), encoding="utf-8")
    poison = tmp_path / "poison.txt"
    poison.write_bytes(b"{this is not an alert")
    letters = TopicTail(stack.kafka, topics.DEAD_LETTERS)
    watcher = RequestWatcher(stack)
    reader = AnswerReader(stack.kafka)

    def ours(letter: Any) -> bool:
        return isinstance(letter, DeadLetter) and letter.key == tag.encode()

    with Server(stack, alerts_topic=topics.ALERTS), running_pipeline(stack, tmp_path):
        kcat_produce(stack, tag, [record, record, poison], tmp_path / "apt.log")
        # Records of one key are read in order: the dead letter comes after both copies.
        assert letters.wait_until(lambda seen: any(ours(e) for e in seen), 120)
        requests = [
            e
            for e in watcher.read(2)
            if e.request.requested_by == f"alertmanager:{firing['receiver']}"
        ]
        assert len(requests) == 1, "the second copy of the record started another run"
        answers = reader.wait_for({requests[0].run_id}, timeout_s=180)
    reader.close()
    watcher.close()
    letters.close()
    assert requests[0].run_id in answers, "the run from the topic was not answered"
    assert [a.fingerprint for a in requests[0].request.alerts] == [
        a["fingerprint"] for a in firing["alerts"]
    ]
    [letter] = [e for e in letters.snapshot() if ours(e)]
    assert isinstance(letter, DeadLetter)
    assert letter.source_topic == topics.ALERTS and letter.service == "ingest"
    assert letter.value == b"{this is not an alert"
    assert letter.error_type == "InvalidInputError" and letter.error_message.startswith("not JSON")


@pytest.fixture
def ingest(stack: StackHandle) -> Any:
    with Server(stack) as client:
        yield client


def refired(firing: dict[str, Any]) -> dict[str, Any]:
    """The same alerts firing again after their resolution: new ``startsAt``."""
    again: dict[str, Any] = json.loads(json.dumps(firing))
    for alert in again["alerts"]:
        alert["startsAt"] = "2026-07-09T08:00:00Z"
    return again


def test_resolved_then_firing_again_is_a_new_run_and_the_resolution_is_on_the_first(
    stack: StackHandle, ingest: httpx.Client, projection: Any
) -> None:
    firing, tag = unique_group("firing_group.json")
    resolved = retag(json.loads((FIXTURES / "resolved_group.json").read_text()), firing, tag)
    resolutions = TopicTail(stack.kafka, topics.RESOLUTIONS)

    def post(body: dict[str, Any]) -> dict[str, Any]:
        reply = ingest.post("/api/v1/alerts", json=body, headers=AUTH)
        assert reply.status_code == 200, reply.text
        answer: dict[str, Any] = reply.json()
        return answer

    [first] = post(firing)["runs"]
    assert post(firing)["runs"] == [{"run_id": first["run_id"], "deduplicated": True}]
    assert post(resolved) == {"runs": [], "resolved": 2}
    assert post(resolved) == {"runs": [], "resolved": 2}  # a re-sent resolution
    [second] = post(refired(firing))["runs"]
    assert second["deduplicated"] is False and second["run_id"] != first["run_id"]
    assert post(refired(firing))["runs"] == [{"run_id": second["run_id"], "deduplicated": True}]

    def published(events: list[Any]) -> list[AlertsResolved]:
        return [e for e in events if isinstance(e, AlertsResolved) and e.run_id == first["run_id"]]

    assert resolutions.wait_until(lambda seen: bool(published(seen)), 30)
    time.sleep(1)  # a second event for the re-sent resolution would be here by now
    resolutions.close()
    [event] = published(resolutions.snapshot())
    assert sorted(a.endsAt for a in event.alerts) == [
        "2026-07-08T23:40:00.5Z",
        "2026-07-08T23:41:15Z",
    ]
    assert event.requested_by == f"alertmanager:{firing['receiver']}"

    view: Projection = projection()
    view.start()
    view.wait_caught_up()
    with view.conn() as conn:
        trace = build_trace(conn, first["run_id"])
        later = build_trace(conn, second["run_id"])
        listed = {r.run_id: r for r in list_runs(conn, limit=500).runs}
    assert trace is not None and later is not None
    assert trace.run.resolved_at == "2026-07-08T23:41:15.000+00:00"
    assert [a.endsAt for a in trace.run.resolved_alerts or []] == [
        "2026-07-08T23:40:00.5Z",
        "2026-07-08T23:41:15Z",
    ]
    assert later.run.resolved_at is None and later.run.resolved_alerts is None
    assert listed[first["run_id"]].resolved_at == trace.run.resolved_at


def test_the_window_only_separates_alerts_without_starts_at(stack: StackHandle) -> None:
    tag = uuid.uuid4().hex[:8]
    bare = {"labels": {"alertname": "DiskFull", "service": f"svc-{tag}"}}
    dated = {**bare, "startsAt": "2026-07-08T22:00:00Z"}
    published: list[DiagnosisRequested] = []

    def claim(alert: dict[str, Any], window_s: int) -> Claimed:
        [group] = firing_groups(parse_document([alert], receiver=f"test-{tag}"))
        request = build_request(group, "en")
        return DedupStore(stack.pg_dsn, window_s).claim(group, request, published.append)

    first = claim(bare, 3600)
    assert claim(bare, 3600) == Claimed(first.run_id, deduplicated=True)
    later = claim(bare, 0)  # past the window: the next incident of an undated alert
    assert not later.deduplicated and later.run_id != first.run_id
    incident = claim(dated, 0)
    assert claim(dated, 0) == Claimed(incident.run_id, deduplicated=True)

    def refuse(_: DiagnosisRequested) -> None:
        raise TransientError("Kafka did not acknowledge")

    other = {**dated, "startsAt": "2026-07-08T23:00:00Z"}
    [group] = firing_groups(parse_document([other], receiver=f"test-{tag}"))
    with pytest.raises(TransientError):
        DedupStore(stack.pg_dsn, 0).claim(group, build_request(group, "en"), refuse)
    retried = claim(other, 0)  # the failed publish claimed nothing
    assert not retried.deduplicated
    assert [e.run_id for e in published] == [
        first.run_id,
        later.run_id,
        incident.run_id,
        retried.run_id,
    ]
