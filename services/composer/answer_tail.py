"""A read_committed tail of the answers topic, kept current before each decision.

The composer's once-per-run memory is rebuilt from committed answers only. The
tail starts at the first answer of the window (``offsets_for_times``), so a
restart or a rebalance never reads the history before it, however long it is;
after that each :meth:`AnswerTail.read_new` reads just what was committed since
the last one, on every partition of the topic: after a partition-count change a
run's earlier answer may sit on any partition, so no partition is left out. New
partitions are picked up as they appear (read from their first offset).
"""

from __future__ import annotations

import logging
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

Answered = tuple[str, int]  # a run id and its answer's timestamp (ms)


class AnswerTail:
    """Where the composer has read the answers topic up to, partition by partition."""

    def __init__(self, kafka: KafkaSettings, codec: Codec, topic: str = topics.ANSWERS) -> None:
        self._kafka = kafka
        self._codec = codec
        self.topic = topic
        self._consumer: Any = None
        self.positions: edge.Offsets = {}
        self.messages_read = 0  # in all, for the figures

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
            starts = self._starts(since_ms)
            ends = self._ends(list(starts))
            found: list[Answered] = []
            for messages in edge.read_range(self._consumer, starts, ends, timeout_s=READ_TIMEOUT_S):
                found += _answers(self._codec, messages)
                self.messages_read += len(messages)
            self.positions = {key: max(starts[key], ends[key]) for key in starts}
            return found
        except KafkaException as exc:
            self.close()
            raise TransientError(f"cannot read answered runs: {exc}") from exc

    def close(self) -> None:
        consumer, self._consumer, self.positions = self._consumer, None, {}
        if consumer is not None:
            consumer.close()

    def _starts(self, since_ms: int) -> edge.Offsets:
        """Known partitions from where the last read stopped, new ones from the window.

        The partitions are asked of the broker each time: an answer on a partition
        added a moment ago must count as much as any other.
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
