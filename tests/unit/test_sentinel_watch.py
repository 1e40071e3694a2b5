"""The deadline watch gives up on stalled runs exactly once, never on answered ones."""

from __future__ import annotations

from datetime import timedelta

from services.sentinel.watch import Watch, deadline_verdict
from tests.support.samples import sample
from tracebound.client import new_request
from tracebound.events import Answer, PlanProduced

DEADLINE = timedelta(seconds=30)


def test_stalled_run_is_given_up_once_with_a_reject_verdict() -> None:
    request = new_request("payment-service 当前是否有 HighCPUUsage 告警？", language="zh")
    watch = Watch(DEADLINE)
    watch.observe(request)
    t0 = request.occurred_at
    assert watch.overdue(t0 + timedelta(seconds=29)) == []
    [state] = watch.overdue(t0 + timedelta(seconds=31))
    assert watch.overdue(t0 + timedelta(seconds=90)) == []
    verdict = deadline_verdict(state, DEADLINE)
    assert (verdict.verdict, verdict.verifier_mode) == ("REJECT", "deadline")
    assert verdict.run_id == request.run_id and verdict.request == request.request
    assert verdict.composer_input.allowed_claims == ()


def test_progress_moves_the_deadline() -> None:
    request = new_request("q")
    watch = Watch(DEADLINE)
    watch.observe(request)
    plan = sample(PlanProduced).model_copy(
        update={
            "run_id": request.run_id,
            "occurred_at": request.occurred_at + timedelta(seconds=20),
        }
    )
    watch.observe(plan)
    assert watch.overdue(request.occurred_at + timedelta(seconds=45)) == []
    assert watch.overdue(request.occurred_at + timedelta(seconds=51))


def test_answered_runs_are_never_given_up_whatever_the_reading_order() -> None:
    request = new_request("q")
    answer = sample(Answer).model_copy(update={"run_id": request.run_id})
    watch = Watch(DEADLINE)
    watch.observe(answer)  # the answers topic may be read before the requests topic
    watch.observe(request)
    assert watch.overdue(request.occurred_at + timedelta(hours=1)) == []


def test_runs_of_a_partition_handed_over_are_dropped() -> None:
    mine, theirs = new_request("mine"), new_request("theirs")
    watch = Watch(DEADLINE)
    watch.observe(mine, 0)
    watch.observe(theirs, 2)
    assert watch.drop({2}) == 1
    late = theirs.occurred_at + timedelta(seconds=31)
    assert [s.run_id for s in watch.overdue(late)] == [mine.run_id]


def test_a_deadline_verdict_read_back_counts_as_given_up() -> None:
    request = new_request("q")
    watch = Watch(DEADLINE)
    watch.observe(request, 1)
    [state] = watch.overdue(request.occurred_at + timedelta(seconds=31))
    sent = deadline_verdict(state, DEADLINE)
    successor = Watch(DEADLINE)  # the partition's next owner reads the window again
    successor.observe(request, 1)
    successor.observe(sent, 1)
    assert successor.overdue(sent.occurred_at + timedelta(seconds=90)) == []
