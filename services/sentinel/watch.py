"""The deadline watch: which runs stopped making progress (pure, clock passed in).

A run progresses with every event of it on any stage topic. When none arrives for
longer than the deadline and the run has no answer yet, the watch gives up on it:
the sentinel then sends a deadline verdict (REJECT, nothing allowed) to the
composer, which answers that the diagnosis could not be completed. Should the real
verdict still come later, the composer's once-per-run memory ignores it.

Each run is watched on one partition number (the stage topics are co-partitioned,
so a run's events share it); when the sentinel's group takes that partition away,
the watch drops the run and the new owner watches it from its own look-back read.
A deadline verdict read back counts as given up, so the new owner of a partition
never sends a second one for a run the old owner already gave up on.

Progress is read from each event's envelope alone (:mod:`tracebound.codec.heads`):
the evidence, gatekeeper results and verdicts behind it are kilobytes each, and
decoding them all cost the sentinel more CPU than any role. An event is read whole
only when the watch needs more than its envelope: a request (small, and the
question a deadline verdict answers) and the sentinel's own verdicts. Of the other
events the watch keeps the latest one's bytes per run and reads them only if the
run stalls, for the request and the round a deadline verdict carries.
"""

from __future__ import annotations

from collections.abc import Callable, Container
from contextlib import suppress
from dataclasses import dataclass
from datetime import datetime, timedelta

from services.common.failed_run import DEADLINE_MODE, FAILED_MODES, given_up_verdict
from tracebound.codec import EventHead
from tracebound.errors import PoisonInput
from tracebound.events import (
    DiagnosisRequest,
    Event,
    Verdict,
)
from tracebound.topology import role

SERVICE = "sentinel"
# The topics whose events count as a run's progress (the topology's watched set).
WATCHED: tuple[str, ...] = role(SERVICE).watched_topics
MAX_FINISHED = 200_000
READ_WHOLE = "DiagnosisRequested"  # the one event always read whole (the question)


@dataclass
class RunState:
    run_id: str
    session_id: str | None
    request: DiagnosisRequest | None
    last_progress: datetime
    stage: str
    round: int = 1
    given_up: bool = False
    partition: int = 0
    unread: bytes | None = None  # the latest event not read whole yet
    unread_at: datetime | None = None


@dataclass(frozen=True)
class Reader:
    """How the watch reads a value: its envelope, or the whole event."""

    head: Callable[[bytes], EventHead]
    event: Callable[[bytes], Event]


class Watch:
    def __init__(self, deadline: timedelta, read: Reader) -> None:
        self.deadline = deadline
        self.read = read
        self.runs: dict[str, RunState] = {}
        self.finished: dict[str, None] = {}  # insertion-ordered, bounded

    def observe(self, value: bytes, partition: int = 0) -> None:
        """One event's value read from a watched topic; PoisonInput if unreadable."""
        head = self.read.head(value)
        if head.name == "Answer":
            self._finish(head.run_id)
            return
        whole = head.name == READ_WHOLE or (head.name == "Verdict" and head.producer == SERVICE)
        event = self.read.event(value) if whole else None  # unreadable: nothing changes
        state = self._progress(head, partition)
        if state is None:
            return
        if event is not None:
            self._fold(state, event)
        elif state.unread_at is None or head.occurred_at >= state.unread_at:
            state.unread, state.unread_at = value, head.occurred_at

    def _finish(self, run_id: str) -> None:
        self.runs.pop(run_id, None)
        self.finished[run_id] = None
        if len(self.finished) > MAX_FINISHED:
            self.finished.pop(next(iter(self.finished)))

    def _progress(self, head: EventHead, partition: int) -> RunState | None:
        """The state of the run ``head`` moves on (None: the run is answered)."""
        if head.run_id in self.finished:
            return None
        state = self.runs.get(head.run_id)
        if state is None:
            state = RunState(head.run_id, head.session_id, None, head.occurred_at, "")
            self.runs[head.run_id] = state
        state.partition = partition
        state.last_progress = max(state.last_progress, head.occurred_at)
        state.stage = head.name
        return state

    @staticmethod
    def _fold(state: RunState, event: Event) -> None:
        """What a whole event tells beyond its envelope: the request, the round, and
        whether it is a deadline verdict (an answer never gets here: its envelope ends
        the run)."""
        if isinstance(event, Verdict) and event.verifier_mode in FAILED_MODES:
            state.given_up = True
        request = getattr(event, "request", None)
        if isinstance(request, DiagnosisRequest):
            state.request = request
        state.round = max(state.round, int(getattr(event, "round", 1) or 1))

    def drop(self, partitions: set[int]) -> int:
        """Stop watching the runs of ``partitions`` (no longer ours); returns how many."""
        gone = [run_id for run_id, s in self.runs.items() if s.partition in partitions]
        for run_id in gone:
            del self.runs[run_id]
        return len(gone)

    def overdue(self, now: datetime, settled: Container[int] | None = None) -> list[RunState]:
        """Runs to give up on now (each is returned once); with ``settled``, only runs of
        those partitions (the others are still being read: their answers may be ahead)."""
        due = []
        for state in self.runs.values():
            if state.given_up or now - state.last_progress <= self.deadline:
                continue
            if settled is not None and state.partition not in settled:
                continue
            if state.unread is not None:
                self._read_unread(state, state.unread)
            if not state.given_up and state.request is not None:
                state.given_up = True
                due.append(state)
        return due

    def _read_unread(self, state: RunState, value: bytes) -> None:
        state.unread = state.unread_at = None
        with suppress(PoisonInput):  # an invalid event tells nothing more (it is dead-lettered)
            self._fold(state, self.read.event(value))


def deadline_verdict(state: RunState, deadline: timedelta) -> Verdict:
    assert state.request is not None
    seconds = int(deadline.total_seconds())
    rationale = (
        f"deadline: no progress for more than {seconds}s after {state.stage or 'the request'}; "
        "the diagnosis could not be completed and nothing is asserted"
    )
    return given_up_verdict(
        run_id=state.run_id,
        session_id=state.session_id,
        request=state.request,
        service=SERVICE,
        mode=DEADLINE_MODE,
        rationale=rationale,
        round_no=state.round,
    )
