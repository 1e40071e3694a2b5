"""A replica's rebuilt clients leave no partition without a member (real broker).

The broker-loss scenario, made deterministic: replica ``a`` owns every partition;
replica ``b`` joins, and the rebalance's first round tells ``a`` to give up half.
``a`` is wedged (it does not poll, as when its transaction's coordinator died), so
it never serves that revocation; its loop abandons the clients and builds new
ones, which join with the same static ``group.instance.id``. The coordinator
gives them the stored first-round assignment without a rebalance, so without the
loop's rejoin the given-up half stays with no member until something else
rebalances the group. The sentinel's group member, built again, must do the same.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

import pytest

from services.sentinel.ownership import Ownership
from tests.support.stack import StackHandle
from tracebound import kafka as edge
from tracebound import topics
from tracebound.events import DiagnosisRequested
from tracebound.runtime import ServiceLoop, ServiceMetrics, ServiceSpec
from tracebound.settings import RuntimeSettings

pytestmark = pytest.mark.integration

PARTITIONS = 6
SETTLE_S = 60.0  # a hang guard, not a timing assertion
JOIN_S = 6.0  # the first round of the join's rebalance, completed without the wedged member


def _loop(stack: StackHandle, group: str, topic: str, replica: str) -> ServiceLoop:
    spec = ServiceSpec(
        name=group, input_topics=(topic,), handler=lambda _e: [], accepts=(DiagnosisRequested,)
    )
    loop = ServiceLoop(
        spec,
        kafka=stack.kafka,
        runtime=RuntimeSettings(replica_id=replica),
        metrics=ServiceMetrics(group),
    )
    loop._connect()
    return loop


def _step(*loops: ServiceLoop) -> None:
    """One turn of each loop's reading: poll, then any membership repair due."""
    for loop in loops:
        loop._next_batch()
        repair = loop._group.due(time.monotonic())
        if repair is not None:
            loop._repair(repair)


def _owned(loop: ServiceLoop) -> set[int]:
    return {tp.partition for tp in loop._consumer.assignment()}


def _for(seconds: float, turn: Callable[[], None]) -> None:
    """``turn()`` for ``seconds``: the other replica joins while the wedged one serves nothing."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        turn()


def _until(condition: Callable[[], bool], turn: Callable[[], None], what: str) -> None:
    """``turn()`` (every member's one turn) until ``condition()``, or fail past the guard."""
    end = time.monotonic() + SETTLE_S
    while time.monotonic() < end:
        turn()
        if condition():
            return
    raise AssertionError(f"not within {SETTLE_S:.0f}s: {what}")


@pytest.mark.timeout(240)
def test_a_rebuilt_member_rejoins_so_no_partition_is_left_unowned(stack: StackHandle) -> None:
    topic = stack.topic("rejoin", partitions=PARTITIONS)
    group = f"rejoin-{uuid.uuid4().hex[:8]}"
    a = _loop(stack, group, topic, "a")
    _until(lambda: len(_owned(a)) == PARTITIONS, lambda: _step(a), "a owns every partition")
    b = _loop(stack, group, topic, "b")
    # b joins; a, wedged, serves nothing while the first round completes.
    _for(JOIN_S, lambda: _step(b))
    a._rebuild_clients()  # what the loop does when a transaction's calls overran
    try:
        _until(
            lambda: _owned(a) | _owned(b) == set(range(PARTITIONS)) and bool(_owned(a)),
            lambda: _step(a, b),
            "every partition owned again, by both replicas",
        )
        assert not _owned(a) & _owned(b)
    finally:
        for loop in (a, b):
            loop._close_clients()


def _serve(*members: Ownership) -> None:
    """One turn of each sentinel member: poll, then any membership repair due."""
    for member in members:
        member.poll()
        assert not member.repair(), "no loss here: nothing to build again"
    time.sleep(0.05)


@pytest.mark.timeout(240)
def test_a_rebuilt_sentinel_member_rejoins_so_no_partition_is_left_unowned(
    stack: StackHandle,
) -> None:
    probe = edge.consumer(stack.kafka, "rejoin-probe")
    try:
        every = set(range(edge.partition_counts(probe, [topics.REQUESTS], 10.0)[topics.REQUESTS]))
    finally:
        probe.close()
    tag = uuid.uuid4().hex[:8]
    a = Ownership(stack.kafka, f"sentinel-rejoin-a-{tag}", 60.0)
    members = [a]
    try:
        _until(lambda: a.owned == every, lambda: _serve(a), "a owns every partition")
        b = Ownership(stack.kafka, f"sentinel-rejoin-b-{tag}", 60.0)
        members.append(b)
        _for(JOIN_S, lambda: _serve(b))  # b joins; a, wedged, serves nothing
        a.close()  # as the sentinel does after a fatal error: a new member, same id
        members.remove(a)
        a = Ownership(stack.kafka, f"sentinel-rejoin-a-{tag}", 60.0, rebuilt=True)
        members.append(a)
        _until(
            lambda: a.owned | b.owned == every and bool(a.owned) and not a.owned & b.owned,
            lambda: _serve(a, b),
            "every partition owned again, by both members",
        )
    finally:
        for member in members:
            member.close()
