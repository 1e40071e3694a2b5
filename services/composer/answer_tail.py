"""A read_committed tail of the answers topic, kept current before each decision.

The composer's once-per-run memory is rebuilt from committed answers only. The
tail starts at the first answer of the window (``offsets_for_times``), so a
restart or a rebalance never reads the history before it, however long it is;
after that each :meth:`AnswerTail.read_new` reads just what was committed since
the last one, on every partition of the topic: after a partition-count change a
run's earlier answer may sit on any partition, so no partition is left out. New
partitions are picked up as they appear (read from their first offset).

The tail consumer stays assigned to every partition and keeps fetching. A *sync*
asks the broker for the partitions and their last stable offsets and reads up to
them: on the first read, after :meth:`AnswerTail.resync` (the composer calls it
on every assignment) and at least every ``SYNC_INTERVAL_S``. Between syncs a read
takes only what the consumer has already fetched: no broker round trip on the
hot path, and an answer committed elsewhere is still known within the interval
plus one fetch. The consumer is never re-assigned to the same partitions (a new
assignment starts its fetching over, which cost more than the reads), and the
lookups go through a second client: on the tail's own connection they would
queue behind its waiting fetch.
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
FETCH_WAIT_S = 0.1  # a sync's wait for the next fetched message
REASSIGN_AFTER_S = 5.0  # a sync still short of the ends this long assigns the tail anew

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
        self._lookups: Any = None  # asks for partitions and offsets on a connection of its own
        self._synced_at: float | None = None  # None: the next read is a sync
        self._reassign = True  # the next sync assigns the tail at the positions
        self.positions: edge.Offsets = {}
        self.messages_read = 0  # in all, for the figures

    def resync(self) -> None:
        """Make the next read a sync that assigns the tail anew (after any assignment of
        the composer's: the partitions, their owners or the broker may have changed)."""
        self._synced_at = None
        self._reassign = True

    def read_new(self, since_ms: int) -> list[Answered]:
        """Every answer committed since the last call (since ``since_ms`` on the first).

        Raises ``TransientError`` while the topic cannot be read; the positions
        are then forgotten, so the next read starts again from the window.
        """
        try:
            if self._consumer is None:
                self._consumer = edge.consumer(
                    self._kafka, "composer-answers", config=edge.READ_TO_END
                )
                self._lookups = edge.consumer(self._kafka, "composer-answers-lookups")
            if self._synced_at is None or self._clock() - self._synced_at >= SYNC_INTERVAL_S:
                found = self._sync(since_ms)
                self._synced_at = self._clock()  # after it: a slow sync is not repeated at once
                return found
            return self._drain()
        except KafkaException as exc:
            self.close()
            raise TransientError(f"cannot read answered runs: {exc}") from exc

    def close(self) -> None:
        clients = (self._consumer, self._lookups)
        self._consumer, self._lookups, self.positions = None, None, {}
        self._synced_at = None
        self._reassign = True
        for client in clients:
            if client is not None:
                client.close()

    def _sync(self, since_ms: int) -> list[Answered]:
        """Follow every partition (new ones from the window) up to its last stable offset."""
        keys = edge.partitions(self._lookups, [self.topic], required=True)
        new = [key for key in keys if key not in self.positions]
        if new:
            self.positions.update(edge.offsets_since(self._lookups, new, since_ms))
            log.info("answers read from the window on %d partitions", len(new))
        if new or self._reassign:
            edge.assign(self._consumer, self.positions)
            self._reassign = False
        ends = self._ends(keys)
        found = self._drain()
        started = time.monotonic()
        reassign_at = started + REASSIGN_AFTER_S
        while behind := [key for key in keys if self.positions[key] < ends[key]]:
            now = time.monotonic()
            if now > started + READ_TIMEOUT_S:
                raise TransientError(f"reading answers timed out ({len(behind)} partitions left)")
            if now > reassign_at:  # a fetch that stopped moving (say, across a broker restart)
                edge.assign(self._consumer, self.positions)
                reassign_at = now + REASSIGN_AFTER_S
            found += self._drain(wait_s=FETCH_WAIT_S)
        return found

    def _drain(self, wait_s: float = 0.0) -> list[Answered]:
        """What the consumer has fetched past the positions (waiting ``wait_s`` for a first).

        An end-of-partition event moves a position too: past the markers that end
        every transaction, which are never handed out as messages.
        """
        found: list[Answered] = []
        while True:
            fetched = edge.next_batch(self._consumer, DRAIN_BATCH, wait_s)
            messages = []
            for message in fetched:
                key = (message.topic(), message.partition())
                problem = edge.consumer_error(message)
                if problem is None:
                    messages.append(message)
                    end = message.offset() + 1
                elif problem is edge.Severity.END_OF_PARTITION:
                    end = message.offset()
                else:
                    continue
                self.positions[key] = max(self.positions.get(key, 0), end)
            found += _answers(self._codec, messages)
            self.messages_read += len(messages)
            if len(fetched) < DRAIN_BATCH:
                return found
            wait_s = 0.0

    def _ends(self, keys: list[edge.Key]) -> edge.Offsets:
        """The last stable offsets: one lookup per broker, not one per partition."""
        asked = [TopicPartition(t, p, OFFSET_END) for t, p in keys]
        found = self._lookups.offsets_for_times(asked, timeout=LOOKUP_TIMEOUT_S)
        ends = {(tp.topic, tp.partition): tp.offset for tp in found if tp.offset >= 0}
        missing = [key for key in keys if key not in ends]
        ends.update(
            {key: high for key, (_low, high) in edge.watermarks(self._lookups, missing).items()}
        )
        return ends


def _answers(codec: Codec, messages: list[Any]) -> list[Answered]:
    return [
        (event.run_id, int(event.occurred_at.timestamp() * 1000))
        for event in edge.decoded(codec, messages)
        if isinstance(event, Answer)
    ]
