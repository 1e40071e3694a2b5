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
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from tracebound.events import (
    Answer,
    ComposerInput,
    DiagnosisRequest,
    Event,
    Producer,
    PromptAudit,
    Verdict,
)
from tracebound.topology import role

SERVICE = "sentinel"
# The topics whose events count as a run's progress (the topology's watched set).
WATCHED: tuple[str, ...] = role(SERVICE).watched_topics
MAX_FINISHED = 200_000
DEADLINE_MODE = "deadline"  # the verifier_mode of the sentinel's verdicts


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


class Watch:
    def __init__(self, deadline: timedelta) -> None:
        self.deadline = deadline
        self.runs: dict[str, RunState] = {}
        self.finished: dict[str, None] = {}  # insertion-ordered, bounded

    def observe(self, event: Event, partition: int = 0) -> None:
        run_id = event.run_id
        if isinstance(event, Answer):
            self.runs.pop(run_id, None)
            self.finished[run_id] = None
            if len(self.finished) > MAX_FINISHED:
                self.finished.pop(next(iter(self.finished)))
            return
        if run_id in self.finished:
            return
        state = self.runs.get(run_id)
        request = getattr(event, "request", None)
        if state is None:
            state = RunState(run_id, event.session_id, None, event.occurred_at, "")
            self.runs[run_id] = state
        state.partition = partition
        if isinstance(event, Verdict) and event.verifier_mode == DEADLINE_MODE:
            state.given_up = True
        if isinstance(request, DiagnosisRequest):
            state.request = request
        state.last_progress = max(state.last_progress, event.occurred_at)
        state.stage = type(event).__name__
        state.round = max(state.round, int(getattr(event, "round", 1) or 1))

    def drop(self, partitions: set[int]) -> int:
        """Stop watching the runs of ``partitions`` (no longer ours); returns how many."""
        gone = [run_id for run_id, s in self.runs.items() if s.partition in partitions]
        for run_id in gone:
            del self.runs[run_id]
        return len(gone)

    def overdue(self, now: datetime) -> list[RunState]:
        """Runs to give up on now (each is returned once)."""
        due = []
        for state in self.runs.values():
            if (
                not state.given_up
                and state.request is not None
                and now - state.last_progress > self.deadline
            ):
                state.given_up = True
                due.append(state)
        return due


def deadline_verdict(state: RunState, deadline: timedelta) -> Verdict:
    assert state.request is not None
    seconds = int(deadline.total_seconds())
    rationale = (
        f"deadline: no progress for more than {seconds}s after {state.stage or 'the request'}; "
        "the diagnosis could not be completed and nothing is asserted"
    )
    return Verdict(
        run_id=state.run_id,
        session_id=state.session_id,
        producer=Producer(service=SERVICE),
        verdict="REJECT",
        groundedness_score=0.0,
        critical_fact_count=0,
        rationale=rationale,
        composer_input=ComposerInput(
            original_query=state.request.query, verdict="REJECT", rationale=rationale
        ),
        prompt_audit=PromptAudit(version="none"),
        round=state.round,
        verifier_mode=DEADLINE_MODE,
        request=state.request,
    )
