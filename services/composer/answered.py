"""One answer per run: the composer remembers which runs its answers already cover.

The memory is derived from committed output only — the ``tracebound.answers``
topic, read ``read_committed`` when partitions are assigned — so it survives
restarts and rebalances, and it is rebuilt whenever a batch is rewound, because
an aborted transaction's answers never happened. With it, a late verdict (say
the real one arriving after the deadline watcher gave up on the run) produces
no second answer.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

from confluent_kafka import KafkaException, TopicPartition

from tracebound import kafka as edge
from tracebound import topics
from tracebound.codec import Codec
from tracebound.errors import TransientError
from tracebound.events import Answer, Event
from tracebound.runtime import Handler
from tracebound.settings import KafkaSettings

log = logging.getLogger("tracebound.composer")
READ_TIMEOUT_S = 120.0


class AnsweredRuns:
    """Run ids that already have a committed answer (plus this batch's, until rewound)."""

    def __init__(self, kafka: KafkaSettings, codec: Codec) -> None:
        self._kafka = kafka
        self._codec = codec
        self._committed: set[str] = set()
        self._pending: set[str] = set()
        self._stale = True
        self._lock = threading.Lock()
        self._reloading = threading.Lock()

    def seen(self, run_id: str) -> bool:
        """Raises ``TransientError`` while the memory cannot be rebuilt (batch retried).

        Calls of one batch may ask at once; one rebuilds the memory and the others
        wait for it, so no rebuild wipes what another call of the batch just added.
        """
        if self._stale:
            with self._reloading:
                if self._stale:
                    self._reload()
        with self._lock:
            return run_id in self._committed or run_id in self._pending

    def add(self, run_id: str) -> None:
        with self._lock:
            self._pending.add(run_id)

    def commit(self) -> None:
        """The batch's transaction committed: its answers are now facts."""
        with self._lock:
            self._committed |= self._pending
            self._pending = set()

    def forget(self) -> None:
        """The batch was rewound or is retried: its answers never happened."""
        with self._lock:
            self._pending = set()

    def restore(self, _assigned: Sequence[TopicPartition] = ()) -> None:
        """On assignment: re-read every committed answer, or retry on first use."""
        try:
            self._reload()
        except TransientError as exc:
            log.warning("answered runs not restored yet: %s", exc)

    def _reload(self) -> None:
        self._stale = True
        runs = self._read_all()  # all partitions: no assumption about partitioning
        with self._lock:
            self._committed, self._pending, self._stale = runs, set(), False
        log.info("restored %d answered runs", len(runs))

    def _read_all(self) -> set[str]:
        consumer = edge.consumer(self._kafka, "composer-restore", config=edge.READ_TO_END)
        runs: set[str] = set()
        try:
            ends = edge.end_offsets(consumer, [topics.ANSWERS])
            if not ends:
                raise TransientError(f"topic {topics.ANSWERS} is not available")
            for messages in edge.read_range(consumer, {}, ends, timeout_s=READ_TIMEOUT_S):
                runs.update(
                    e.run_id for e in edge.decoded(self._codec, messages) if isinstance(e, Answer)
                )
            return runs
        except KafkaException as exc:
            raise TransientError(f"cannot restore answered runs: {exc}") from exc
        finally:
            consumer.close()


class OncePerRun:
    """Wraps the composer handler: a run that already has its answer gets no other."""

    def __init__(self, inner: Handler, answered: AnsweredRuns) -> None:
        self.inner = inner
        self.answered = answered

    def __call__(self, event: Event) -> list[Event]:
        if self.answered.seen(event.run_id):
            log.info("run already answered; verdict ignored", extra={"run_id": event.run_id})
            return []
        outputs = list(self.inner(event))
        if any(isinstance(e, Answer) for e in outputs):
            self.answered.add(event.run_id)
        return outputs
