"""The composer's once-per-run memory: bounded by its window, rewound with its batch."""

from __future__ import annotations

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
