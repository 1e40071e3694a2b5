"""A batch's handler calls in flight at once: input order, one run at a time, whole failures."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from tracebound import topics
from tracebound.codec import make_codec
from tracebound.errors import PoisonInput, TransientError
from tracebound.events import AgentStep, DeadLetter, DiagnosisRequest, DiagnosisRequested, Event
from tracebound.events import Producer as ProducerRef
from tracebound.runtime import ServiceSpec
from tracebound.runtime.batch import transform
from tracebound.runtime.inflight import InFlight
from tracebound.settings import KafkaSettings

CODEC = make_codec(KafkaSettings())
IN, OUT, DLQ = topics.REQUESTS, topics.AGENT_STEPS, topics.DEAD_LETTERS
WAIT_S = 10.0  # only ever reached when a test fails


@dataclass
class FakeMessage:
    """What the runtime reads of a consumed Kafka message."""

    _value: bytes
    _key: bytes | None
    _offset: int
    _topic: str = IN

    def value(self) -> bytes:
        return self._value

    def key(self) -> bytes | None:
        return self._key

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int:
        return 0

    def offset(self) -> int:
        return self._offset


def request(query: str, run_id: str) -> DiagnosisRequested:
    return DiagnosisRequested(
        run_id=run_id,
        producer=ProducerRef(service="test"),
        request=DiagnosisRequest(mode="CHAT", query=query),
    )


def step(event: Event, text: str) -> AgentStep:
    assert isinstance(event, DiagnosisRequested)
    return event.reply(
        AgentStep,
        "test",
        agent_name="test",
        step_index=0,
        model_input=event.request.query,
        model_output=text,
        has_tool_call=False,
        duration_ms=0,
    )


def messages(queries: Sequence[tuple[str, str]]) -> list[FakeMessage]:
    return [
        FakeMessage(CODEC.encode(request(q, run), IN), run.encode(), offset)
        for offset, (q, run) in enumerate(queries)
    ]


def spec(handler: object) -> ServiceSpec:
    return ServiceSpec(
        name="test",
        input_topics=(IN,),
        handler=handler,  # type: ignore[arg-type]
        accepts=(DiagnosisRequested,),
        route=lambda _e: OUT,
        dead_letter_topic=DLQ,
    )


@pytest.fixture
def inflight() -> Iterator[InFlight]:
    pool = InFlight(4)
    yield pool
    pool.shutdown()


def test_calls_overlap_and_outputs_keep_the_input_order(inflight: InFlight) -> None:
    # Four calls wait for each other: they can only all return if they run at once.
    barrier = threading.Barrier(4, timeout=WAIT_S)
    finish_order: list[str] = []

    def handler(event: Event) -> list[Event]:
        assert isinstance(event, DiagnosisRequested)
        barrier.wait()
        finish_order.append(event.request.query)
        return [step(event, event.request.query.upper())]

    batch = messages([(f"q{i}", f"run-{i}") for i in range(4)])
    outputs, dead = transform(spec(handler), CODEC, batch, inflight)
    assert dead == []
    texts = [CODEC.decode(value, topic).model_output for topic, _k, value, _h in outputs]  # type: ignore[attr-defined]
    assert texts == ["Q0", "Q1", "Q2", "Q3"]
    assert sorted(finish_order) == ["q0", "q1", "q2", "q3"]


def test_inputs_of_one_run_never_run_at_once_and_keep_their_order(inflight: InFlight) -> None:
    running: set[str] = set()
    overlaps: list[str] = []
    order: list[str] = []
    lock = threading.Lock()

    def handler(event: Event) -> list[Event]:
        assert isinstance(event, DiagnosisRequested)
        with lock:
            if event.run_id in running:
                overlaps.append(event.run_id)
            running.add(event.run_id)
            order.append(event.request.query)
        threading.Event().wait(0.01)
        with lock:
            running.discard(event.run_id)
        return [step(event, event.request.query)]

    queries = [(f"{run}-{n}", run) for n in range(5) for run in ("a", "b", "c")]
    outputs, _ = transform(spec(handler), CODEC, messages(queries), inflight)
    assert overlaps == []
    for run in ("a", "b", "c"):
        assert [q for q in order if q.startswith(run)] == [f"{run}-{n}" for n in range(5)]
    texts = [CODEC.decode(value, topic).model_output for topic, _k, value, _h in outputs]  # type: ignore[attr-defined]
    assert texts == [q for q, _ in queries]


def test_poison_inputs_are_dead_lettered_in_place(inflight: InFlight) -> None:
    def handler(event: Event) -> list[Event]:
        assert isinstance(event, DiagnosisRequested)
        if event.request.query == "poison":
            raise PoisonInput("refused")
        return [step(event, "ok")]

    batch = messages([("a", "r1"), ("poison", "r2"), ("b", "r3")])
    batch.insert(2, FakeMessage(b"\x00not avro", b"r4", 9))
    outputs, dead = transform(spec(handler), CODEC, batch, inflight)
    assert [o.topic for o in outputs] == [OUT, DLQ, DLQ, OUT]
    assert len(dead) == 2
    letter = CODEC.decode(outputs[1][2], DLQ)
    assert isinstance(letter, DeadLetter) and letter.run_id == "r2"


def test_one_call_at_a_time_gives_what_calls_in_flight_give(inflight: InFlight) -> None:
    def handler(event: Event) -> list[Event]:
        assert isinstance(event, DiagnosisRequested)
        if event.request.query == "poison":
            raise PoisonInput("refused")
        return [step(event, event.request.query), step(event, "again")]

    batch = messages([("a", "r1"), ("poison", "r2"), ("b", "r3"), ("c", "r1")])
    batch.insert(2, FakeMessage(b"\x00not avro", b"r4", 9))

    def seen(outputs: list[Any]) -> list[tuple[str, Any]]:
        decoded = [(o.topic, CODEC.decode(o.value, o.topic)) for o in outputs]
        return [(topic, getattr(event, "model_output", None)) for topic, event in decoded]

    concurrent, dead = transform(spec(handler), CODEC, batch, inflight)
    for one in (None, InFlight(1)):
        outputs, dead_too = transform(spec(handler), CODEC, batch, one)
        assert seen(outputs) == seen(concurrent)
        assert dead_too == dead == ["PoisonInput", "DecodeError"]


def test_a_transient_failure_fails_the_batch_after_the_running_calls_return(
    inflight: InFlight,
) -> None:
    started = threading.Barrier(2, timeout=WAIT_S)
    finished: list[str] = []

    def handler(event: Event) -> list[Event]:
        assert isinstance(event, DiagnosisRequested)
        if event.request.query == "slow":
            started.wait()
            threading.Event().wait(0.2)
            finished.append("slow")
            return [step(event, "late")]
        started.wait()
        raise TransientError("the database is away")

    batch = messages([("slow", "r1"), ("fails", "r2")])
    with pytest.raises(TransientError):
        transform(spec(handler), CODEC, batch, inflight)
    assert finished == ["slow"], "the batch failed before a running call returned"


def test_one_worker_runs_inline_on_the_callers_thread() -> None:
    threads: list[str] = []

    def handler(event: Event) -> list[Event]:
        threads.append(threading.current_thread().name)
        return [step(event, "ok")]

    transform(spec(handler), CODEC, messages([("a", "r1"), ("b", "r2")]), InFlight(1))
    assert threads == [threading.current_thread().name] * 2


def test_each_call_encodes_its_own_outputs_on_its_worker(inflight: InFlight) -> None:
    # Encoding after the last call would keep the commit waiting on CPU work that
    # could have overlapped the other calls' waits.
    encoded_on: list[str] = []

    class RecordingCodec:
        def encode(self, event: Event, topic: str | None = None) -> bytes:
            encoded_on.append(threading.current_thread().name)
            return CODEC.encode(event, topic)

        def decode(self, data: bytes | None, topic: str | None = None) -> Event:
            return CODEC.decode(data, topic)

    def handler(event: Event) -> list[Event]:
        return [step(event, "done")]

    outputs, _ = transform(
        spec(handler), RecordingCodec(), messages([("a", "r1"), ("b", "r2")]), inflight
    )
    assert len(outputs) == 2
    assert encoded_on and all(name.startswith("handler") for name in encoded_on)
