"""The ingest's run buffer: events kept as read, decoded when asked for, bounded twice."""

from __future__ import annotations

import asyncio

from services.ingest.runs import ANSWERS, EventReader, RunBuffer
from tests.support.messages import Message
from tests.support.samples import sample
from tracebound.codec import SingleObjectCodec
from tracebound.events import Answer, DiagnosisRequested, Event, PlanProduced
from tracebound.settings import KafkaSettings
from tracebound.topics import topic_for

CODEC = SingleObjectCodec()


def Msg(topic: str, offset: int, value: bytes | None, key: bytes | None = None) -> Message:
    return Message(topic, 0, offset, value, key)


class CountingCodec(SingleObjectCodec):
    def __init__(self) -> None:
        self.decoded = 0

    def decode(self, data: bytes | None, topic: str | None = None) -> Event:
        self.decoded += 1
        return super().decode(data, topic)


def _run(run_id: str) -> tuple[DiagnosisRequested, PlanProduced, Answer]:
    request = sample(DiagnosisRequested).model_copy(
        update={"run_id": run_id, "event_id": f"{run_id}-request"}
    )
    plan = sample(PlanProduced).model_copy(update={"run_id": run_id, "event_id": f"{run_id}-plan"})
    answer = sample(Answer).model_copy(update={"run_id": run_id, "event_id": f"{run_id}-answer"})
    return request, plan, answer


def _message(event: Event, offset: int) -> Message:
    topic = topic_for(event.schema_name)
    return Msg(topic, offset, CODEC.encode(event), event.run_id.encode())


def test_events_are_decoded_only_for_a_run_asked_about() -> None:
    codec = CountingCodec()
    runs = RunBuffer(codec=codec)
    for i in range(20):
        request, plan, _ = _run(f"r-{i}")
        runs.add_message(f"r-{i}", _message(request, 2 * i))
        runs.add_message(f"r-{i}", _message(plan, 2 * i + 1))
    assert codec.decoded == 0
    events, answer = runs.snapshot("r-7")
    assert [e.event_id for e in events] == ["r-7-request", "r-7-plan"] and answer is None
    assert codec.decoded == 2
    runs.snapshot("r-7")
    assert codec.decoded == 2  # decoded once


def test_answers_are_decoded_as_they_come() -> None:
    runs = RunBuffer()
    _, _, answer = _run("r-1")
    runs.add_message("r-1", _message(answer, 0))
    assert topic_for("Answer") == ANSWERS
    assert runs.snapshot("r-1")[1] == answer


def test_a_message_read_again_and_an_event_published_here_count_once() -> None:
    runs = RunBuffer()
    request, plan, _ = _run("r-1")
    runs.add(request)  # what this process published ...
    runs.add_message("r-1", _message(request, 0))  # ... and the reader's copy of it
    runs.add_message("r-1", _message(plan, 0))
    runs.add_message("r-1", _message(plan, 0))  # a re-read after a reconnect
    events, _ = runs.snapshot("r-1")
    assert [e.event_id for e in events] == ["r-1-request", "r-1-plan"]


def test_the_buffer_is_bounded_by_runs_and_by_bytes_oldest_first() -> None:
    by_count = RunBuffer(max_runs=10)
    for i in range(25):
        by_count.add(_run(f"run-{i}")[1])
    assert by_count.snapshot("run-0") == ([], None)
    assert len(by_count.snapshot("run-24")[0]) == 1

    request = _message(_run("x")[0], 0)
    size = len(request.value() or b"")
    by_bytes = RunBuffer(max_runs=1000, max_bytes=10 * size)
    for i in range(30):
        event = _run(f"run-{i}")[0]
        by_bytes.add_message(event.run_id, _message(event, i))
    assert by_bytes.size <= 10 * size
    assert by_bytes.snapshot("run-19") == ([], None)
    assert [e.run_id for e in by_bytes.snapshot("run-29")[0]] == ["run-29"]


def test_undecodable_and_misfiled_messages_are_passed_over() -> None:
    runs = RunBuffer()
    request = _run("r-1")[0]
    runs.add_message("r-1", Msg(topic_for("PlanProduced"), 5, b"\xc3\x01garbage", b"r-1"))
    runs.add_message("r-1", _message(_run("r-2")[1], 6))  # keyed under another run
    runs.add_message("r-1", _message(request, 7))
    assert [e.event_id for e in runs.snapshot("r-1")[0]] == ["r-1-request"]


def test_a_waiter_gets_each_new_event_decoded() -> None:
    async def scenario() -> list[str]:
        runs = RunBuffer()
        request, plan, answer = _run("r-1")
        runs.add_message("r-1", _message(request, 0))
        loop_queue = runs.subscribe("r-1")
        runs.add_message("r-1", _message(plan, 1))
        runs.add_message("r-1", _message(plan, 1))
        runs.add_message("r-1", _message(answer, 2))
        await asyncio.sleep(0)
        got = [loop_queue[1].get_nowait().event_id for _ in range(loop_queue[1].qsize())]
        runs.unsubscribe("r-1", loop_queue)
        return got

    assert asyncio.run(scenario()) == ["r-1-plan", "r-1-answer"]


def test_the_reader_files_a_message_under_its_key_or_its_decoded_run_id() -> None:
    runs = RunBuffer()
    reader = EventReader(KafkaSettings(), runs, 60)
    request, plan, _ = _run("r-1")
    reader._take(_message(request, 0))
    keyless = _message(plan, 1)
    keyless.key_bytes = None
    reader._take(keyless)
    reader._take(Msg(topic_for("PlanProduced"), 2, None, b"r-1"))  # a tombstone
    assert [e.event_id for e in runs.snapshot("r-1")[0]] == ["r-1-request", "r-1-plan"]


def test_a_message_read_twice_counts_once_in_the_byte_bound_once_decoded() -> None:
    runs = RunBuffer()
    request, plan, _ = _run("r-1")
    once = [_message(request, 0), _message(plan, 1)]
    for message in (*once, *once):  # read again after a rebalance
        runs.add_message("r-1", message)
    read_once = sum(len(m.value() or b"") for m in once)
    assert runs.size == 2 * read_once  # not decoded yet: no telling
    events, _ = runs.snapshot("r-1")
    assert len(events) == 2
    assert runs.size == read_once
