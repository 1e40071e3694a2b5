"""Exactly-once processing on the real broker: kills, poison input, broker restarts."""

from __future__ import annotations

import random
import signal
import subprocess
import time
import uuid
from collections import Counter

import pytest

from tests.support.kafka_io import (
    CODEC,
    Collector,
    produce_events,
    produce_raw,
    request_event,
    start_echo,
)
from tests.support.stack import StackHandle
from tracebound.events import AgentStep, DeadLetter, DiagnosisRequest, DiagnosisRequested
from tracebound.events import Producer as ProducerRef


def _topics(stack: StackHandle, name: str) -> dict[str, str]:
    return {
        "in": stack.topic(f"{name}-in"),
        "out": stack.topic(f"{name}-out"),
        "dlq": stack.topic(f"{name}-dlq"),
        "group": f"test-{name}-{uuid.uuid4().hex[:6]}",
    }


def _assert_one_output_per_input(outputs: list[AgentStep], inputs: list[str]) -> None:
    causes = Counter(o.causation_id for o in outputs)
    duplicated = {k: v for k, v in causes.items() if v > 1}
    missing = set(inputs) - set(causes)
    assert not duplicated, f"{len(duplicated)} inputs produced more than one output"
    assert not missing, f"{len(missing)} inputs produced no output"
    assert len(outputs) == len(inputs)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def _kill_mid_stream(
    stack: StackHandle,
    t: dict[str, str],
    out: Collector,
    expected: int,
    kills: int,
    env: dict[str, str] | None = None,
    **echo: str,
) -> None:
    """Start the echo service, SIGKILL it ``kills`` times mid-stream, wait for the rest."""
    rng = random.Random(7)
    env = stack.env() | (env or {})
    proc = start_echo(env, **t, **echo)
    try:
        for _ in range(kills):
            seen = len(out.events)
            # Kill only mid-stream: after this incarnation made progress, before the end.
            deadline = time.monotonic() + 120
            target = seen + rng.randint(50, 250)
            while len(out.events) < target and time.monotonic() < deadline:
                time.sleep(0.05)
            assert len(out.events) < expected, "stream finished before the kills"
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
            proc = start_echo(env, **t, **echo)
        assert out.wait_for(expected, timeout=300)
        out.settle()
    finally:
        _stop(proc)


def test_sigkilled_service_processes_each_input_exactly_once(stack: StackHandle) -> None:
    t = _topics(stack, "eos")
    inputs = [request_event(f"q{i}") for i in range(2000)]
    produce_events(stack.kafka, t["in"], inputs)
    out = Collector(stack.kafka, t["out"])
    try:
        _kill_mid_stream(stack, t, out, len(inputs), kills=3, delay_ms="4")
    finally:
        out.close()
    outputs = [e for e in out.events if isinstance(e, AgentStep)]
    _assert_one_output_per_input(outputs, [e.event_id for e in inputs])


def test_sigkilled_concurrent_service_loses_doubles_and_reorders_nothing(
    stack: StackHandle,
) -> None:
    """Handler calls in flight at once (a role with a model): kills lose and double nothing,
    the inputs of one run are answered in their order, poison is still dead-lettered."""
    t = _topics(stack, "eosc")
    inputs = [
        request_event(f"poison: {i}" if i % 97 == 0 else f"q{i}", run_id=f"run-{i % 150}")
        for i in range(900)
    ]
    produce_events(stack.kafka, t["in"], inputs)
    good = [e for e in inputs if not e.request.query.startswith("poison:")]
    out = Collector(stack.kafka, t["out"])
    dlq = Collector(stack.kafka, t["dlq"])
    concurrency = f"TRACEBOUND_{t['group'].upper().replace('-', '_')}_CONCURRENCY"
    try:
        _kill_mid_stream(
            stack,
            t,
            out,
            len(good),
            kills=2,
            env={concurrency: "8"},
            delay_ms="30",
            budget_s="1",
        )
        assert dlq.wait_for(len(inputs) - len(good), timeout=60)
        dlq.settle(2)
    finally:
        out.close()
        dlq.close()
    outputs = [e for e in out.events if isinstance(e, AgentStep)]
    _assert_one_output_per_input(outputs, [e.event_id for e in good])
    order = {e.event_id: i for i, e in enumerate(good)}
    by_run: dict[str, list[int]] = {}
    for o in outputs:
        by_run.setdefault(o.run_id, []).append(order[o.causation_id or ""])
    assert all(seq == sorted(seq) for seq in by_run.values()), "a run's inputs were reordered"
    letters = [e for e in dlq.events if isinstance(e, DeadLetter)]
    assert len(letters) == len(inputs) - len(good)


def test_poison_inputs_are_dead_lettered_and_the_partition_moves_on(stack: StackHandle) -> None:
    t = _topics(stack, "poison")
    good_before = [request_event(f"before{i}", run_id="run-p") for i in range(5)]
    good_after = [request_event(f"after{i}", run_id="run-p") for i in range(5)]
    valid_body = CODEC.encode(request_event("x"))
    unknown_fp = b"\xc3\x01" + bytes(8) + valid_body[10:]
    invalid_model = DiagnosisRequested.model_construct(
        event_id=str(uuid.uuid4()),
        run_id="run-p",
        occurred_at=good_before[0].occurred_at,
        producer=ProducerRef(service="test"),
        causation_id=None,
        session_id=None,
        request=DiagnosisRequest.model_construct(
            mode="NOT-A-MODE",  # type: ignore[arg-type]  # deliberately not a mode
            query="q",
            alerts=(),
            language="en",
            requested_by="",
        ),
    )
    handler_refused = request_event("poison: refuse me", run_id="run-p")
    produce_events(stack.kafka, t["in"], good_before)
    produce_raw(
        stack.kafka,
        t["in"],
        [
            (b"run-p", random.Random(1).randbytes(64)),
            (b"run-p", unknown_fp),
            (b"run-p", CODEC.encode(invalid_model)),
            (b"run-p", CODEC.encode(handler_refused)),
        ],
    )
    produce_events(stack.kafka, t["in"], good_after)
    out = Collector(stack.kafka, t["out"])
    dlq = Collector(stack.kafka, t["dlq"])
    proc = start_echo(stack.env(), **t)
    try:
        assert out.wait_for(10, timeout=120)
        assert dlq.wait_for(4, timeout=60)
        out.settle(2)
    finally:
        _stop(proc)
        out.close()
        dlq.close()
    letters = [e for e in dlq.events if isinstance(e, DeadLetter)]
    assert [x.error_type for x in letters] == [
        "DecodeError",
        "UnknownSchemaError",
        "EventValidationError",
        "PoisonInput",
    ]
    for letter in letters:
        assert letter.source_topic == t["in"]
        assert letter.source_offset >= 5
        assert letter.error_message
        assert letter.key == b"run-p"
        assert letter.value
    offsets = sorted(x.source_offset for x in letters)
    assert offsets == list(range(offsets[0], offsets[0] + 4)), "all poison shares one partition"
    queries = [e.model_input for e in out.events if isinstance(e, AgentStep)]
    assert queries == [f"before{i}" for i in range(5)] + [f"after{i}" for i in range(5)]


def test_broker_restart_mid_stream_loses_and_duplicates_nothing(stack: StackHandle) -> None:
    if stack.kind != "local":
        pytest.skip("stopping the broker needs the local stack")
    t = _topics(stack, "restart")
    inputs = [request_event(f"r{i}") for i in range(2000)]
    produce_events(stack.kafka, t["in"], inputs[:1000])
    out = Collector(stack.kafka, t["out"])
    proc = start_echo(stack.env(), **t, delay_ms="2")
    try:
        deadline = time.monotonic() + 120
        while len(out.events) < 300 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert 0 < len(out.events) < len(inputs)
        stack.stop_broker()
        time.sleep(3)
        stack.start_broker()
        produce_events(stack.kafka, t["in"], inputs[1000:])
        assert out.wait_for(len(inputs), timeout=300), f"only {len(out.events)} outputs"
        out.settle()
        assert proc.poll() is None, "the service died with the broker"
    finally:
        _stop(proc)
        out.close()
    outputs = [e for e in out.events if isinstance(e, AgentStep)]
    _assert_one_output_per_input(outputs, [e.event_id for e in inputs])
