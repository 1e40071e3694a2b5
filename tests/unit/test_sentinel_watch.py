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
