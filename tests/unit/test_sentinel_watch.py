"""The deadline watch gives up on stalled runs exactly once, never on answered ones."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from services.sentinel.ownership import Ends
from services.sentinel.watch import Reader, Watch, deadline_verdict
from tests.support.samples import sample
from tracebound.client import new_request
from tracebound.codec import SingleObjectCodec
from tracebound.errors import PoisonInput
from tracebound.events import (
    Answer,
    DiagnosisRequested,
    Event,
    EvidenceProduced,
    GatekeeperResult,
    PlanProduced,
)

DEADLINE = timedelta(seconds=30)
CODEC = SingleObjectCodec()


class Counted(Watch):
    """A watch over events encoded as the topics hold them, counting its whole reads."""

    def __init__(self) -> None:
        self.whole_reads = 0

        def whole(value: bytes) -> Event:
            self.whole_reads += 1
            return CODEC.decode(value)

        super().__init__(DEADLINE, Reader(CODEC.decode_head, whole))

    def see(self, event: Event, partition: int = 0) -> None:
        self.observe(CODEC.encode(event), partition)


def test_stalled_run_is_given_up_once_with_a_reject_verdict() -> None:
    request = new_request("payment-service 当前是否有 HighCPUUsage 告警？", language="zh")
    watch = Counted()
    watch.see(request)
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
    watch = Counted()
    watch.see(request)
    plan = sample(PlanProduced).model_copy(
        update={
            "run_id": request.run_id,
            "occurred_at": request.occurred_at + timedelta(seconds=20),
        }
    )
    watch.see(plan)
    assert watch.overdue(request.occurred_at + timedelta(seconds=45)) == []
    assert watch.overdue(request.occurred_at + timedelta(seconds=51))


def test_answered_runs_are_never_given_up_whatever_the_reading_order() -> None:
    request = new_request("q")
    answer = sample(Answer).model_copy(update={"run_id": request.run_id})
    watch = Counted()
    watch.see(answer)  # the answers topic may be read before the requests topic
    watch.see(request)
    assert watch.overdue(request.occurred_at + timedelta(hours=1)) == []


def test_runs_of_a_partition_handed_over_are_dropped() -> None:
    mine, theirs = new_request("mine"), new_request("theirs")
    watch = Counted()
    watch.see(mine, 0)
    watch.see(theirs, 2)
    assert watch.drop({2}) == 1
    late = theirs.occurred_at + timedelta(seconds=31)
    assert [s.run_id for s in watch.overdue(late)] == [mine.run_id]


def test_a_deadline_verdict_read_back_counts_as_given_up() -> None:
    request = new_request("q")
    watch = Counted()
    watch.see(request, 1)
    [state] = watch.overdue(request.occurred_at + timedelta(seconds=31))
    sent = deadline_verdict(state, DEADLINE)
    successor = Counted()  # the partition's next owner reads the window again
    successor.see(request, 1)
    successor.see(sent, 1)
    assert successor.overdue(sent.occurred_at + timedelta(seconds=90)) == []


def _of(model: type[Event], asked: DiagnosisRequested, seconds: float, **update: Any) -> Any:
    """A sample ``model`` of the run of ``asked``, ``seconds`` after it, with the request."""
    return sample(model).model_copy(
        update={
            "run_id": asked.run_id,
            "occurred_at": asked.occurred_at + timedelta(seconds=seconds),
            "request": asked.request,
            **update,
        }
    )


def test_later_events_are_read_whole_only_when_the_run_stalls() -> None:
    request = new_request("q")
    watch = Counted()
    watch.see(request)
    late = _of(GatekeeperResult, request, 10, round=2)
    early = _of(EvidenceProduced, request, 5, round=1)
    watch.see(late)
    watch.see(early)  # read after the later event: the later one is still the one kept
    assert watch.whole_reads == 1  # the request alone
    assert watch.overdue(request.occurred_at + timedelta(seconds=39)) == []
    assert watch.whole_reads == 1
    [state] = watch.overdue(request.occurred_at + timedelta(seconds=41))
    assert watch.whole_reads == 2 and state.stage == "EvidenceProduced"
    verdict = deadline_verdict(state, DEADLINE)
    assert verdict.round == 2 and verdict.request == request.request


def test_a_run_whose_request_was_before_the_look_back_is_given_up_all_the_same() -> None:
    request = new_request("q")
    watch = Counted()
    watch.see(_of(EvidenceProduced, request, 0))
    [state] = watch.overdue(request.occurred_at + timedelta(seconds=31))
    assert state.request == request.request


def test_unreadable_values_change_nothing() -> None:
    request = new_request("q")
    watch = Counted()
    value = CODEC.encode(request)
    with pytest.raises(PoisonInput):
        watch.observe(value[:-3])
    with pytest.raises(PoisonInput):
        watch.observe(b"not avro")
    assert watch.runs == {}


def test_runs_of_a_partition_still_being_read_are_not_judged() -> None:
    request = new_request("q")
    watch = Counted()
    watch.see(request, 1)
    late = request.occurred_at + timedelta(seconds=31)
    assert watch.overdue(late, settled={0, 2}) == []  # its answer may be ahead in the read
    assert [s.run_id for s in watch.overdue(late, settled={1})] == [request.run_id]


def test_a_partition_is_settled_once_every_watched_partition_of_it_was_read_to_its_end() -> None:
    ends = Ends()
    ends.expect([("requests", 0), ("answers", 0), ("requests", 1), ("answers", 1)])
    ends.reached("requests", 0)
    assert ends.settled({0, 1, 2}) == {2}  # 2: nothing to read
    ends.reached("answers", 0)
    ends.reached("answers", 0)  # reached again after more messages: still settled
    assert ends.settled({0, 1}) == {0}
    ends.drop([1])  # handed over
    assert ends.settled({0, 1}) == {0, 1}
    ends.expect([("answers", 1)])  # assigned again: read again first
    assert ends.settled({0, 1}) == {0}
