"""The alerts topic: what a record may be, and where a record that cannot be read goes."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from confluent_kafka import TopicPartition

from services.ingest.alert_topic import AlertTopicReader, OversizedRecord, parse_record
from services.ingest.alertmanager import AlertGroup, firing_groups
from services.ingest.dedup import Claimed
from services.ingest.intake import Intake
from services.ingest.settings import IngestSettings
from tests.support.messages import Message
from tracebound.errors import InvalidInputError, TransientError
from tracebound.events import Alert, AlertsResolved, DeadLetter, DiagnosisRequested, Event
from tracebound.settings import KafkaSettings
from web.app import default_ports

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "alertmanager"
TOPIC = "tracebound.alerts"


def firing_text() -> bytes:
    return (FIXTURES / "firing_group.json").read_bytes()


def message(value: bytes | None, key: bytes | None = b"k-1", offset: int = 41) -> Message:
    """A record of the alerts topic as the reader consumes it."""
    return Message(TOPIC, 2, offset, value, key)


class Claims:
    """Claims every group as new, after PostgreSQL was away for ``down`` claims."""

    def __init__(self, down: int = 0) -> None:
        self.groups: list[AlertGroup] = []
        self.resolved: list[Alert] = []
        self.down = down

    def ensure_schema(self) -> None:
        pass

    def claim(
        self,
        group: AlertGroup,
        request: DiagnosisRequested,
        publish: Callable[[DiagnosisRequested], None],
    ) -> Claimed:
        if self.down:
            self.down -= 1
            raise TransientError("PostgreSQL unreachable")
        self.groups.append(group)
        publish(request)
        return Claimed(request.run_id, deduplicated=False)

    def record_resolved(
        self,
        alerts: Sequence[Alert],
        requested_by: str,
        publish: Callable[[list[AlertsResolved]], None],
    ) -> int:
        self.resolved += alerts
        return len(alerts)


def reader_and_intake(
    max_bytes: int = 4096 * 16,
) -> tuple[AlertTopicReader, Intake, list[Event], Claims]:
    published: list[Event] = []

    def publish(events: Sequence[Event]) -> None:
        published.extend(events)

    claims = Claims()
    reader = AlertTopicReader(KafkaSettings(), TOPIC, max_bytes, publish)
    return reader, Intake(claims, publish, "group", "en"), published, claims


def test_a_webhook_a_single_alert_and_a_list_are_records() -> None:
    webhook = parse_record(firing_text(), 1 << 20, TOPIC)
    alert = json.loads(firing_text())["alerts"][0]
    single = parse_record(json.dumps(alert).encode(), 1 << 20, TOPIC)
    listed = parse_record(json.dumps([alert, alert]).encode(), 1 << 20, TOPIC)
    assert [len(g.alerts) for g in firing_groups(webhook)] == [2]
    assert [len(g.alerts) for g in firing_groups(single)] == [1]
    assert [len(g.alerts) for g in firing_groups(listed)] == [1]  # one alert listed twice
    assert single.receiver == TOPIC


@pytest.mark.parametrize(
    ("value", "error", "reason"),
    [
        (b"{not json", InvalidInputError, "not JSON"),
        (b'"a string"', InvalidInputError, "expected an Alertmanager webhook object"),
        (b'{"labels": {"severity": "page"}}', InvalidInputError, "alertname"),
        (None, InvalidInputError, "empty record"),
        (b"[" + b" " * 5000 + b"]", OversizedRecord, "larger than 4096"),
    ],
)
def test_records_that_cannot_be_read_say_why(
    value: bytes | None, error: type[Exception], reason: str
) -> None:
    with pytest.raises(error, match=reason):
        parse_record(value, 4096, TOPIC)


def test_a_bad_record_becomes_a_dead_letter_with_its_reason_and_place() -> None:
    reader, intake, published, claims = reader_and_intake()
    reader.handle(intake, message(b"{not json"))
    [letter] = published
    assert isinstance(letter, DeadLetter)
    assert (letter.source_topic, letter.source_partition, letter.source_offset) == (TOPIC, 2, 41)
    assert letter.value == b"{not json" and letter.key == b"k-1"
    assert letter.service == "ingest" and letter.error_message.startswith("not JSON")
    assert claims.groups == []


def test_a_good_record_takes_the_webhook_path() -> None:
    reader, intake, published, claims = reader_and_intake()
    reader.handle(intake, message(firing_text()))
    [request] = published
    assert isinstance(request, DiagnosisRequested)
    assert request.request.requested_by == "alertmanager:tracebound"
    assert [g.key for g in claims.groups] == [json.loads(firing_text())["groupKey"]]


def test_the_reader_is_on_by_default_and_an_empty_topic_turns_it_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("TRACEBOUND_INGEST_ALERTS_TOPIC", raising=False)
    assert IngestSettings().alerts_topic == TOPIC
    on = default_ports(IngestSettings())
    monkeypatch.setenv("TRACEBOUND_INGEST_ALERTS_TOPIC", "")
    off = default_ports(IngestSettings())
    try:
        assert isinstance(on.alert_topic, AlertTopicReader) and off.alert_topic is None
    finally:
        on.publisher.close()
        off.publisher.close()


def test_a_large_unreadable_record_is_dead_lettered_without_its_bytes() -> None:
    reader, intake, published, _ = reader_and_intake(max_bytes=1 << 20)
    reader.handle(intake, message(b"x" * (600 * 1024)))
    [letter] = published
    assert isinstance(letter, DeadLetter) and letter.value is None
    assert letter.error_message.startswith("not JSON")
    assert letter.error_message.endswith(f"(value of {600 * 1024} bytes not kept)")


class Partition:
    """One partition's records and the reader's position and commits on it."""

    def __init__(self, values: list[bytes]) -> None:
        self.records = [message(v, offset=i) for i, v in enumerate(values)]
        self.position = 0
        self.commits: list[int] = []

    def poll(self, timeout: float) -> Message | None:
        if self.position >= len(self.records):
            return None
        self.position += 1
        return self.records[self.position - 1]

    def consume(self, num_messages: int, timeout: float) -> list[Message]:
        taken = self.records[self.position : self.position + num_messages]
        self.position += len(taken)
        return taken

    def seek(self, where: TopicPartition) -> None:
        self.position = where.offset

    def commit(self, offsets: list[TopicPartition], asynchronous: bool) -> None:
        self.commits += [o.offset for o in offsets]


def test_an_outage_skips_nothing_and_commits_only_what_was_published() -> None:
    published: list[Event] = []
    reader = AlertTopicReader(KafkaSettings(), TOPIC, 1 << 20, published.extend, backoff_s=0)
    claims = Claims(down=2)
    intake = Intake(claims, lambda events: published.extend(events), "group", "en")
    partition = Partition([b"{bad", firing_text(), firing_text()])
    for _ in range(6):
        reader.step(partition, intake)
    assert partition.commits == [1, 2, 3]  # the record of the outage was read again
    assert [type(e).__name__ for e in published] == [
        "DeadLetter",
        "DiagnosisRequested",
        "DiagnosisRequested",  # this fake claims every group anew; the store dedupes
    ]
    assert claims.down == 0 and len(claims.groups) == 2
