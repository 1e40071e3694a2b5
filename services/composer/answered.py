"""One answer per run: the composer remembers which runs its answers already cover.

The memory is derived from committed output only — the ``tracebound.answers``
topic, read ``read_committed`` (:mod:`~services.composer.answer_tail`) — and it
throws away what a batch added when the batch is rewound, because an aborted
transaction's answers never happened. With it, a late verdict (say the real one
arriving after the sentinel gave up on the run) produces no second answer.

Why it holds across replicas and partition changes:

- the replica's own answers are remembered as its transactions commit;
- the tail is read up to the last stable offset of *every* answers partition on
  each assignment and at least every second (``SYNC_INTERVAL_S``), and each batch
  first takes what the tail has fetched since: an answer another replica
  committed is known within about a second, whichever partition it landed on
  (after a partition-count change, a run's earlier verdict and answer may sit on
  another partition than its later ones; the later verdict that could meet it is
  the sentinel's, which comes a deadline — tens of seconds at least — after the
  run stalled);
- a run's verdicts otherwise reach one partition of the verdicts topic (the stage
  topics are co-partitioned, checked by every role), which one replica owns: two
  verdicts of a run are decided one after the other, by the same replica.

It is bounded: the tail starts at the window's first answer
(``TRACEBOUND_COMPOSER_ANSWERED_WINDOW_S``, ``offsets_for_times``), never at
offset 0, and answers older than the window are forgotten. A verdict arriving
more than a window after its run's answer would be answered again; the default
(a day) is far beyond the sentinel's deadline and look-back, so only a stage
stopped for a day could deliver one.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence

from confluent_kafka import TopicPartition
from pydantic import Field
from pydantic_settings import SettingsConfigDict

from services.composer.answer_tail import AnswerTail
from services.composer.handler import failed_answer
from tracebound import topics
from tracebound.codec import Codec
from tracebound.errors import TransientError
from tracebound.events import Answer, Event, Verdict
from tracebound.runtime import Handler
from tracebound.settings import KafkaSettings, TraceboundSettings

log = logging.getLogger("tracebound.composer")
DAY_S = 86_400.0


class AnsweredSettings(TraceboundSettings):
    model_config = SettingsConfigDict(env_prefix="TRACEBOUND_COMPOSER_", frozen=True)

    answered_window_s: float = Field(
        default=DAY_S,
        ge=3600,
        description="how long an answered run is remembered (a later verdict of it is ignored)",
    )


class RunMemory:
    """Answered run ids with their answer time, oldest first; pure, clock passed in."""

    def __init__(self, window_s: float) -> None:
        self.window_ms = int(window_s * 1000)
        self._runs: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._runs)

    def __contains__(self, run_id: object) -> bool:
        return run_id in self._runs

    def remember(self, run_id: str, at_ms: int) -> None:
        if run_id not in self._runs:
            self._runs[run_id] = at_ms

    def forget_before(self, now_ms: int) -> int:
        """Drop answers older than the window; returns how many went.

        Runs are kept in the order they were learnt, which follows answer time
        closely; an entry learnt late is dropped late, never early.
        """
        cutoff, dropped = now_ms - self.window_ms, 0
        while self._runs:
            run_id, at_ms = next(iter(self._runs.items()))
            if at_ms >= cutoff:
                break
            del self._runs[run_id]
            dropped += 1
        return dropped


class AnsweredRuns:
    """Run ids that already have a committed answer (plus this batch's, until rewound)."""

    def __init__(
        self,
        kafka: KafkaSettings,
        codec: Codec,
        window_s: float = DAY_S,
        clock: Callable[[], float] = time.time,
        topic: str = topics.ANSWERS,
    ) -> None:
        self._tail = AnswerTail(kafka, codec, topic)
        self._clock = clock
        self._memory = RunMemory(window_s)
        self._pending: set[str] = set()
        self._current = False
        self._lock = threading.Lock()
        self._reading = threading.Lock()

    def seen(self, run_id: str) -> bool:
        """Raises ``TransientError`` while the answers cannot be read (batch retried).

        The first call of a batch reads what was committed since the last batch;
        the batch's other calls wait for it, then decide on the same memory.
        """
        if not self._current:
            with self._reading:
                if not self._current:
                    self._catch_up()
        with self._lock:
            return run_id in self._memory or run_id in self._pending

    def add(self, run_id: str) -> None:
        with self._lock:
            self._pending.add(run_id)

    def commit(self) -> None:
        """The batch's transaction committed: its answers are now facts."""
        now_ms = int(self._clock() * 1000)
        with self._lock:
            for run_id in self._pending:
                self._memory.remember(run_id, now_ms)
            self._pending, self._current = set(), False

    def forget(self) -> None:
        """The batch was rewound or is retried: its answers never happened."""
        with self._lock:
            self._pending, self._current = set(), False

    def restore(self, assigned: Sequence[TopicPartition] = ()) -> None:
        """On assignment: catch up now, so the first batch finds the memory ready."""
        self._current = False
        self._tail.resync()
        try:
            with self._reading:
                self._catch_up()
        except TransientError as exc:
            log.warning("answered runs not restored yet: %s", exc)

    def __len__(self) -> int:
        return len(self._memory)

    @property
    def messages_read(self) -> int:
        """Answers-topic records read so far (what a restore costs)."""
        return self._tail.messages_read

    def _catch_up(self) -> None:
        now_ms = int(self._clock() * 1000)
        started = time.monotonic()
        found = self._tail.read_new(now_ms - self._memory.window_ms)
        with self._lock:
            for run_id, at_ms in found:
                self._memory.remember(run_id, at_ms)
            dropped = self._memory.forget_before(now_ms)
            self._current = True
        if len(found) > 100 or dropped:
            log.info(
                "answered runs: %d read in %.2fs, %d past the window forgotten, %d remembered",
                len(found),
                time.monotonic() - started,
                dropped,
                len(self._memory),
            )


class OncePerRun:
    """Wraps the composer handler: a run that already has its answer gets no other."""

    def __init__(self, inner: Handler[Verdict, Event], answered: AnsweredRuns) -> None:
        self.inner = inner
        self.answered = answered

    def __call__(self, event: Verdict) -> list[Event]:
        if self.answered.seen(event.run_id):
            log.info("run already answered; verdict ignored", extra={"run_id": event.run_id})
            return []
        outputs = list(self.inner(event))
        if any(isinstance(e, Answer) for e in outputs):
            self.answered.add(event.run_id)
        return outputs

    def failed(self, event: Event, reason: str) -> list[Event]:
        """The failed answer of a run whose verdict was dead-lettered (none if answered)."""
        if self.answered.seen(event.run_id):
            return []
        self.answered.add(event.run_id)
        return failed_answer(event, reason)
