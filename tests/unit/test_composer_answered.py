"""The composer's once-per-run memory: bounded by its window, rewound with its batch."""

from __future__ import annotations

from collections.abc import Callable

from services.composer.answer_tail import SYNC_INTERVAL_S, Answered, AnswerTail
from services.composer.answered import AnsweredRuns, OncePerRun, RunMemory
from tests.support.samples import sample
from tracebound.events import Answer, Event, Verdict

HOUR_MS = 3_600_000


def test_answers_older_than_the_window_are_forgotten_oldest_first() -> None:
    memory = RunMemory(window_s=3600)
    memory.remember("old", 0)
    memory.remember("newer", HOUR_MS // 2)
    memory.remember("old", 2 * HOUR_MS)  # known already: keeps its first answer time
    assert memory.forget_before(HOUR_MS) == 0, "exactly a window old is kept"
    assert memory.forget_before(HOUR_MS + 1) == 1
    assert "old" not in memory and "newer" in memory
    assert memory.forget_before(2 * HOUR_MS) == 1
    assert len(memory) == 0


def test_one_late_entry_is_dropped_late_never_early() -> None:
    memory = RunMemory(window_s=3600)
    memory.remember("learnt-first", 10 * HOUR_MS)
    memory.remember("answered-earlier", 5 * HOUR_MS)
    assert memory.forget_before(10 * HOUR_MS) == 0
    assert "answered-earlier" in memory


class _NoAnswersYet(AnsweredRuns):
    """The memory with an answers topic that is still empty (no broker needed)."""

    def __init__(self) -> None:
        super().__init__(kafka=None, codec=None, window_s=3600)  # type: ignore[arg-type]
        self.reads = 0

    def _catch_up(self) -> None:
        self.reads += 1
        self._current = True


def _answering(event: Event) -> list[Event]:
    assert isinstance(event, Verdict)
    return [sample(Answer).model_copy(update={"run_id": event.run_id})]


def test_a_run_is_answered_once_and_a_rewound_answer_never_happened() -> None:
    verdict = sample(Verdict)
    answered = _NoAnswersYet()
    once = OncePerRun(_answering, answered)
    assert len(once(verdict)) == 1
    assert once(verdict) == [], "the batch's own answer counts before it commits"
    answered.forget()
    assert len(once(verdict)) == 1, "a rewound batch's answer never happened"
    answered.commit()
    assert once(verdict) == []
    assert answered.reads == 3, "the committed answers are read again before each batch"


class _Reads(AnswerTail):
    """The tail's schedule alone: which reads ask the broker (sync) and which drain."""

    def __init__(self, clock: Callable[[], float]) -> None:
        super().__init__(kafka=None, codec=None, clock=clock)  # type: ignore[arg-type]
        self._consumer = object()  # never used: both reads are replaced
        self.reads: list[str] = []

    def _sync(self, since_ms: int) -> list[Answered]:
        self.reads.append("sync")
        return []

    def _drain(self, wait_s: float = 0.0) -> list[Answered]:
        self.reads.append("drain")
        return []


def test_the_tail_asks_the_broker_first_after_a_resync_and_once_per_interval() -> None:
    now = [0.0]
    tail = _Reads(lambda: now[0])
    tail.read_new(0)
    tail.read_new(0)
    now[0] += SYNC_INTERVAL_S / 2
    tail.read_new(0)
    assert tail.reads == ["sync", "drain", "drain"]
    now[0] += SYNC_INTERVAL_S / 2
    tail.read_new(0)
    tail.resync()  # an assignment: the partitions or their owners may have changed
    tail.read_new(0)
    tail.read_new(0)
    assert tail.reads[3:] == ["sync", "sync", "drain"]
