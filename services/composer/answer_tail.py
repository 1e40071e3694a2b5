"""A read_committed tail of the answers topic, kept current before each decision.

The composer's once-per-run memory is rebuilt from committed answers only. The
tail starts at the first answer of the window (``offsets_for_times``), so a
restart or a rebalance never reads the history before it, however long it is;
after that each :meth:`AnswerTail.read_new` reads just what was committed since
the last one, on every partition of the topic: after a partition-count change a
run's earlier answer may sit on any partition, so no partition is left out. New
partitions are picked up as they appear (read from their first offset).

A *sync* asks the broker for the partitions and their last stable offsets and
reads up to them: on the first read, after :meth:`AnswerTail.resync` (the
composer calls it on every assignment) and at least every ``SYNC_INTERVAL_S``.
Between syncs a read takes only what the tail consumer, assigned to every
partition at the synced positions, has already fetched: no broker round trip on
the hot path, and an answer committed elsewhere is still known within the
interval plus one fetch.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import OFFSET_END, KafkaException, TopicPartition

from tracebound import kafka as edge
from tracebound import topics
from tracebound.codec import Codec
from tracebound.errors import TransientError
from tracebound.events import Answer
from tracebound.settings import KafkaSettings

log = logging.getLogger("tracebound.composer")
READ_TIMEOUT_S = 120.0
LOOKUP_TIMEOUT_S = 10.0
# The longest a read relies on the fetched tail alone before asking the broker again.
SYNC_INTERVAL_S = 1.0
DRAIN_BATCH = 2000

Answered = tuple[str, int]  # a run id and its answer's timestamp (ms)


class AnswerTail:
    """Where the composer has read the answers topic up to, partition by partition."""

    def __init__(
        self,
        kafka: KafkaSettings,
        codec: Codec,
        topic: str = topics.ANSWERS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._kafka = kafka
        self._codec = codec
        self.topic = topic
        self._clock = clock
        self._consumer: Any = None
        self._synced_at: float | None = None  # None: the next read is a sync
        self.positions: edge.Offsets = {}
        self.messages_read = 0  # in all, for the figures

    def resync(self) -> None:
        """Make the next read a sync (the partitions or their owners may have changed)."""
        self._synced_at = None

    def read_new(self, since_ms: int) -> list[Answered]:
        """Every answer committed since the last call (since ``since_ms`` on the first).

        Raises ``TransientError`` while the topic cannot be read; the positions
        only move once a read is complete, so a failed read is repeated whole.
        """
        try:
            if self._consumer is None:
                self._consumer = edge.consumer(
                    self._kafka, "composer-answers", config=edge.READ_TO_END
                )
            now = self._clock()
            if self._synced_at is None or now - self._synced_at >= SYNC_INTERVAL_S:
                found = self._sync(since_ms)
                self._synced_at = now
                return found
            return self._drain()
        except KafkaException as exc:
            self.close()
            raise TransientError(f"cannot read answered runs: {exc}") from exc

    def close(self) -> None:
        consumer, self._consumer, self.positions = self._consumer, None, {}
        self._synced_at = None
        if consumer is not None:
            consumer.close()

    def _sync(self, since_ms: int) -> list[Answered]:
        """Read up to the last stable offsets, then follow every partition from there."""
        starts = self._starts(since_ms)
        ends = self._ends(list(starts))
        found: list[Answered] = []
        for messages in edge.read_range(self._consumer, starts, ends, timeout_s=READ_TIMEOUT_S):
            found += _answers(self._codec, messages)
            self.messages_read += len(messages)
        self.positions = {key: max(starts[key], ends[key]) for key in starts}
        edge.assign(self._consumer, self.positions)
        return found

    def _drain(self) -> list[Answered]:
        """What the consumer has already fetched past the positions; never waits."""
        found: list[Answered] = []
        while True:
            fetched = edge.next_batch(self._consumer, DRAIN_BATCH, 0.0)
            messages = [m for m in fetched if m.error() is None]
            for message in messages:
                key = (message.topic(), message.partition())
                self.positions[key] = max(self.positions.get(key, 0), message.offset() + 1)
            found += _answers(self._codec, messages)
            self.messages_read += len(messages)
            if len(fetched) < DRAIN_BATCH:
                return found

    def _starts(self, since_ms: int) -> edge.Offsets:
        """Known partitions from where the last read stopped, new ones from the window.

        The partitions are asked of the broker at every sync: an answer on a
        partition added a moment ago must count as much as any other.
        """
        keys = edge.partitions(self._consumer, [self.topic], required=True)
        new = [key for key in keys if key not in self.positions]
        starts = {key: self.positions[key] for key in keys if key in self.positions}
        if new:
            starts.update(edge.offsets_since(self._consumer, new, since_ms))
            log.info("answers read from the window on %d partitions", len(new))
        return starts

    def _ends(self, keys: list[edge.Key]) -> edge.Offsets:
        """The last stable offsets: one lookup per broker, not one per partition."""
        asked = [TopicPartition(t, p, OFFSET_END) for t, p in keys]
        found = self._consumer.offsets_for_times(asked, timeout=LOOKUP_TIMEOUT_S)
        ends = {(tp.topic, tp.partition): tp.offset for tp in found if tp.offset >= 0}
        missing = [key for key in keys if key not in ends]
        ends.update(
            {key: high for key, (_low, high) in edge.watermarks(self._consumer, missing).items()}
        )
        return ends


def _answers(codec: Codec, messages: list[Any]) -> list[Answered]:
    return [
        (event.run_id, int(event.occurred_at.timestamp() * 1000))
        for event in edge.decoded(codec, messages)
        if isinstance(event, Answer)
    ]
