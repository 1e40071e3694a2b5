"""The event stream's causal order: causes first, however the topics were read."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.support.samples import sample
from tracebound.events import Answer, DiagnosisRequested, Event, PlanProduced, Verdict
from web.causal import CausalOrder

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def chain() -> list[Event]:
    """request → plan → verdict → answer, one second apart."""
    kinds: list[type[Event]] = [DiagnosisRequested, PlanProduced, Verdict, Answer]
    events: list[Event] = []
    for i, kind in enumerate(kinds):
        cause = events[-1].event_id if events else None
        events.append(
            sample(kind).model_copy(
                update={
                    "event_id": f"e{i}",
                    "causation_id": cause,
                    "occurred_at": T0 + timedelta(seconds=i),
                }
            )
        )
    return events


def ids(events: list[Event]) -> list[str]:
    return [e.event_id for e in events]


def test_events_read_in_reverse_come_out_in_causal_order() -> None:
    order = CausalOrder(hold_s=10)
    out: list[Event] = []
    for event in reversed(chain()):
        out += order.offer(event, now=0)
    assert ids(out) == ["e0", "e1", "e2", "e3"]
    assert not order.holding() and order.next_expiry() is None


def test_a_repeat_is_let_go_once() -> None:
    order = CausalOrder(hold_s=10)
    request, plan, *_ = chain()
    assert ids(order.offer(request, 0)) == ["e0"]
    assert order.offer(request, 0) == []
    assert ids(order.offer(plan, 0)) == ["e1"]
    assert order.offer(plan, 0) == []


def test_an_event_whose_cause_never_shows_is_let_go_after_the_hold() -> None:
    order = CausalOrder(hold_s=10)
    _, plan, verdict, answer = chain()  # the request is older than the look-back
    assert order.offer(answer, now=1) == []
    assert order.offer(verdict, now=2) == []
    assert order.offer(plan, now=3) == []
    assert order.next_expiry() == 11
    assert order.expired(now=10.9) == []
    assert ids(order.expired(now=11)) == ["e1", "e2", "e3"]
    assert not order.holding()


def test_unrelated_causes_do_not_hold_each_other() -> None:
    order = CausalOrder(hold_s=10)
    request, plan, verdict, _ = chain()
    deadline_verdict = verdict.model_copy(update={"event_id": "late", "causation_id": None})
    assert order.offer(plan, 0) == []
    assert ids(order.offer(deadline_verdict, 0)) == ["late"]
    assert ids(order.offer(request, 0)) == ["e0", "e1"]


def test_a_causation_cycle_is_let_go_after_the_hold() -> None:
    order = CausalOrder(hold_s=10)
    _, plan, verdict, _ = chain()
    looped = plan.model_copy(update={"causation_id": verdict.event_id})
    assert order.offer(looped, 0) == [] and order.offer(verdict, 0) == []
    assert sorted(ids(order.expired(now=10))) == ["e1", "e2"]
    assert not order.holding()
