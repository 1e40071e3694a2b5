"""Transactional calls bounded near the session timeout: a wedged call ends the clients."""

from __future__ import annotations

import subprocess
import sys
import threading
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from tracebound.runtime.bounded import MIN_CALL_S, BoundedCalls, ClientStuckError, Deadline


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_deadline_shares_one_bound_between_calls_and_never_gives_zero() -> None:
    clock = Clock()
    deadline = Deadline(10.0, clock)
    assert deadline.left() == 10.0
    clock.now += 4.0
    assert deadline.left() == 6.0 and not deadline.passed()
    clock.now += 6.0
    assert deadline.passed()
    assert deadline.left() == MIN_CALL_S  # librdkafka reads 0 as "do not wait"


def test_a_call_past_its_bound_is_abandoned_and_the_next_one_runs_at_once() -> None:
    calls = BoundedCalls(grace_s=0.01)
    wedged = threading.Event()

    def wedge() -> None:
        wedged.wait(30)

    with pytest.raises(ClientStuckError, match="overran"):
        calls.run(wedge, 0.05)
    calls.abandon()
    done: list[str] = []
    calls.run(lambda: done.append("ran"), 5.0)  # a fresh worker, not behind the wedged one
    assert done == ["ran"]
    wedged.set()
    calls.shutdown()


def test_a_client_error_inside_the_bound_is_raised_as_itself() -> None:
    calls = BoundedCalls(grace_s=0.01)

    def fail() -> None:
        raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "timed out"))

    with pytest.raises(KafkaException):
        calls.run(fail, 5.0)
    calls.shutdown()


class WedgedProducer:
    """Hangs in ``send_offsets_to_transaction`` as when the group coordinator died."""

    def __init__(self, release: threading.Event) -> None:
        self.release = release
        self.timeouts: list[float] = []

    def begin_transaction(self) -> None:
        pass

    def produce(self, *_args: Any, **_kwargs: Any) -> None:
        pass

    def poll(self, _timeout: float) -> int:
        return 0

    def send_offsets_to_transaction(self, _offsets: Any, _group: Any, timeout: float) -> None:
        self.timeouts.append(timeout)
        self.release.wait(60)

    def commit_transaction(self, _timeout: float) -> None:
        raise AssertionError("a wedged transaction must never commit")


class Consumer:
    closed = False

    def consumer_group_metadata(self) -> object:
        return object()

    def close(self) -> None:
        self.closed = True


class Message:
    def topic(self) -> str:
        return "t"

    def partition(self) -> int:
        return 0

    def offset(self) -> int:
        return 7


@pytest.mark.slow
def test_a_transaction_wedged_past_the_call_bound_rebuilds_the_clients() -> None:
    from tracebound.events import DiagnosisRequested
    from tracebound.runtime import ServiceLoop, ServiceMetrics, ServiceSpec, bounded
    from tracebound.settings import KafkaSettings, RuntimeSettings

    spec = ServiceSpec(
        name="planner", input_topics=("t",), handler=lambda _e: [], accepts=(DiagnosisRequested,)
    )
    loop = ServiceLoop(
        spec,
        kafka=KafkaSettings(),
        runtime=RuntimeSettings(
            replica_id="bound", transaction_timeout_ms=60_000, transaction_call_timeout_ms=1_000
        ),
        metrics=ServiceMetrics("planner"),
    )
    loop._calls = bounded.BoundedCalls(grace_s=0.05)
    release = threading.Event()
    producer, consumer = WedgedProducer(release), Consumer()
    loop._producer, loop._consumer = producer, consumer
    rebuilt: list[bool] = []
    loop._connect = lambda: rebuilt.append(True)  # type: ignore[method-assign]
    try:
        assert loop._commit([Message()], [("out", b"k", b"v")]) is False  # type: ignore[list-item]
    finally:
        release.set()
    # The call was bounded by the call bound, not the 60 s transaction timeout.
    assert producer.timeouts and producer.timeouts[0] <= 1.0
    assert rebuilt == [True] and consumer.closed
    assert loop._producer is None  # dropped; the rebuild makes a new one


@pytest.mark.slow
def test_a_process_exits_without_waiting_on_an_abandoned_call() -> None:
    """A role that stopped cleanly exits even while a wedged call sits on its old thread."""
    script = (
        "import time\n"
        "from tracebound.runtime.bounded import BoundedCalls, ClientStuckError\n"
        "calls = BoundedCalls(grace_s=0.01)\n"
        "try:\n"
        "    calls.run(lambda: time.sleep(3600), 0.05)\n"
        "except ClientStuckError:\n"
        "    calls.abandon()\n"
        "calls.run(lambda: None, 5)\n"
        "calls.shutdown()\n"
        "print('stopped')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert (done.returncode, done.stdout.strip()) == (0, "stopped"), done.stderr
