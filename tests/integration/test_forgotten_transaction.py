"""A transaction its coordinator forgot no longer stops a role (real broker).

The state a broker stopped mid-commit left behind (records open on the role's
output partitions, its input offsets pending in its group, nothing on the broker
to end either) is made on the stack's broker with the wire protocol
(:mod:`tests.support.forgotten_txn`), with the producer id of the role's own
``transactional.id``. Without the sweep the role holds its partitions and reads
nothing, for ever; with it, the forgotten records are aborted, the inputs they
stood for are read again from the stable offsets, and every input has exactly one
output.
"""

from __future__ import annotations

import threading
import uuid

import pytest

from tests.support import forgotten_txn
from tests.support.echo_service import echo
from tests.support.kafka_io import Collector, produce_events, request_event
from tests.support.stack import StackHandle
from tracebound import kafka as edge
from tracebound.events import DiagnosisRequested
from tracebound.runtime import ServiceLoop, ServiceMetrics, ServiceSpec, hanging
from tracebound.settings import RuntimeSettings

pytestmark = pytest.mark.integration

GUARD_S = 120.0  # a hang guard, not a timing assertion
FIRST, SECOND = 12, 12


class _Running:
    """A service loop in a thread of the test process."""

    def __init__(self, stack: StackHandle, spec: ServiceSpec) -> None:
        runtime = RuntimeSettings(replica_id="a", transaction_timeout_ms=5000)
        self.loop = ServiceLoop(spec, stack.kafka, runtime, metrics=ServiceMetrics(spec.name))
        self.thread = threading.Thread(target=self.loop.run, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.loop.stop()
        self.thread.join(30)
        assert not self.thread.is_alive(), "the loop did not stop"


def _wait(collector: Collector, count: int, what: str) -> None:
    assert collector.wait_for(count, GUARD_S), (
        f"{what}: {len(collector.snapshot())} of {count} outputs within {GUARD_S:.0f}s"
    )


@pytest.mark.timeout(420)
def test_a_forgotten_transaction_is_swept_and_nothing_is_lost_or_doubled(
    stack: StackHandle, monkeypatch: pytest.MonkeyPatch
) -> None:
    admin = edge.admin(stack.kafka, "test")
    if len(admin.list_topics(timeout=10).brokers) != 1:
        pytest.skip("the forgotten transaction is written to the one broker of the stack")
    monkeypatch.setattr(hanging, "SILENT_S", 2.0)
    monkeypatch.setattr(hanging, "CHECK_EVERY_S", 1.0)
    monkeypatch.setattr(hanging, "CONFIRM_MARGIN_S", 1.0)
    inputs, outputs = stack.topic("forgot-in"), stack.topic("forgot-out")
    group = f"forgot-{uuid.uuid4().hex[:8]}"
    spec = ServiceSpec(
        name=group,
        input_topics=(inputs,),
        handler=echo,
        accepts=(DiagnosisRequested,),
        route=lambda _event: outputs,
        dead_letter_topic=stack.topic("forgot-dl"),
        output_topics=(outputs,),
    )
    out = Collector(stack.kafka, outputs)
    try:
        # Stable offsets first: the role reads and commits the first inputs.
        first = [request_event(f"first {i}") for i in range(FIRST)]
        produce_events(stack.kafka, inputs, first)
        running = _Running(stack, spec)
        _wait(out, FIRST, "before the fault")
        running.stop()
        # The forgotten transaction of the role's transactional.id: records on every
        # output partition, and offsets past the inputs still to come.
        second = [request_event(f"second {i}") for i in range(SECOND)]
        produce_events(stack.kafka, inputs, second)
        with forgotten_txn.verification_off(stack.kafka):
            forgotten_txn.leave_forgotten(
                stack.kafka,
                f"{group}-a",
                {(outputs, p): [b"forgotten"] for p in range(3)},
                group,
                {(inputs, p): 10_000 for p in range(3)},
            )
        running = _Running(stack, spec)
        _wait(out, FIRST + SECOND, "after the forgotten transaction")
        running.stop()
        out.settle(2.0)
        replies = [e.run_id for e in out.snapshot()]
        asked = {e.run_id for e in first + second}
        assert sorted(replies) == sorted(asked), "an input lost or answered twice"
        assert b"forgotten" not in b"".join(out.raw), "a forgotten record was read"
    finally:
        out.close()
