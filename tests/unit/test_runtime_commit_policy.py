"""The commit policy, the stage clock and the codec's cheaper paths, without Kafka."""

from __future__ import annotations

import json
import uuid

import pytest

from tests.support.samples import sample
from tracebound import fastjson
from tracebound.codec import SingleObjectCodec
from tracebound.errors import ConfigError, EventValidationError
from tracebound.events import DiagnosisRequested, ToolInvoked
from tracebound.events.base import new_event_id
from tracebound.runtime import ServiceSpec
from tracebound.runtime.batch import Output, transform
from tracebound.runtime.commit_policy import CommitPolicy, Uncommitted
from tracebound.runtime.stages import StageClock
from tracebound.settings import RuntimeSettings

POLICY = CommitPolicy(interval_s=0.1, max_messages=100)


def test_nothing_open_is_never_due() -> None:
    assert not POLICY.due(0, 0.0, 10.0, more_waiting=False)


def test_an_open_transaction_commits_when_input_runs_dry() -> None:
    assert POLICY.due(1, 0.0, 0.001, more_waiting=False)


def test_while_input_keeps_coming_it_commits_by_size_or_by_time() -> None:
    assert not POLICY.due(99, 0.0, 0.05, more_waiting=True)
    assert POLICY.due(100, 0.0, 0.05, more_waiting=True)
    assert POLICY.due(1, 0.0, 0.1, more_waiting=True)


def test_interval_zero_commits_after_every_poll() -> None:
    policy = CommitPolicy.of("planner", RuntimeSettings(commit_interval_ms=0))
    assert policy.due(1, 5.0, 5.0, more_waiting=True)


def test_defaults_and_an_interval_too_close_to_the_transaction_timeout() -> None:
    policy = CommitPolicy.of("planner", RuntimeSettings())
    assert (policy.interval_s, policy.max_messages) == (0.1, 5_000)
    settings = RuntimeSettings(commit_interval_ms=20_000, transaction_timeout_ms=30_000)
    with pytest.raises(ConfigError, match="TRACEBOUND_PLANNER_COMMIT_INTERVAL_MS=20000"):
        CommitPolicy.of("planner", settings)


def test_uncommitted_work_keeps_the_time_its_first_input_came() -> None:
    open_ = Uncommitted()
    open_.add(["a"], [Output("t", None, b"1")], [], now=1.0)
    open_.add(["b"], [], ["DecodeError"], now=2.0)
    assert (open_.inputs, open_.dead, open_.opened_at) == (["a", "b"], ["DecodeError"], 1.0)


class _Message:
    def __init__(self, value: bytes) -> None:
        self._value = value

    def value(self) -> bytes:
        return self._value

    def key(self) -> bytes:
        return b"k"

    def topic(self) -> str:
        return "in"

    def partition(self) -> int:
        return 0

    def offset(self) -> int:
        return 7


def test_a_batch_counts_its_codec_and_handler_time(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = StageClock()
    monkeypatch.setattr("tracebound.runtime.batch.CLOCK", clock)
    codec = SingleObjectCodec()
    spec = ServiceSpec("echo", ("in",), lambda e: [e], (DiagnosisRequested,), lambda _e: "out")
    outputs, dead = transform(spec, codec, [_Message(codec.encode(sample(DiagnosisRequested)))])
    assert (len(outputs), dead) == (1, [])
    seconds = clock.seconds()
    assert seconds["codec"] > 0 and seconds["handler"] > 0
    assert seconds["kafka"] == seconds["postgres"] == 0


def test_json_fields_read_as_the_standard_library_reads_them() -> None:
    texts = [
        '{"b": [1, 2.5, null, true], "a": "é"}',
        '{"big": 123456789012345678901234567890}',
        "[1e400, -0.0]",
        '"a string of 20 digits 12345678901234567890"',
        '{"low": -9999999999999999999, "text": "负载 92%"}',
        '["\u0661\u0662\u0663 ١٢٣٤٥٦٧٨٩٠١٢٣٤٥٦٧٨٩٠١٢٣", 18446744073709551615]',
        '"\ud800" ',
    ]
    for text in texts:
        assert fastjson.loads(text) == json.loads(text)
        assert type(fastjson.loads(text)) is type(json.loads(text))
    assert fastjson.loads("[-9999999999999999999]") == [-9999999999999999999]
    assert isinstance(fastjson.loads('{"big": 123456789012345678901234567890}')["big"], int)


def test_json_fields_round_trip_and_invalid_records_still_fail() -> None:
    codec = SingleObjectCodec()
    event = sample(ToolInvoked)
    assert codec.decode(codec.encode(event)) == event
    bad = sample(DiagnosisRequested)
    bad = bad.model_copy(update={"request": bad.request.model_copy(update={"mode": "X"})})
    with pytest.raises(EventValidationError):
        codec.decode(codec.encode(bad))


def test_event_ids_are_random_version_4_uuids() -> None:
    ids = {new_event_id() for _ in range(1000)}
    assert len(ids) == 1000
    for text in list(ids)[:50]:
        parsed = uuid.UUID(text)
        assert (parsed.version, parsed.variant, str(parsed)) == (4, uuid.RFC_4122, text)
