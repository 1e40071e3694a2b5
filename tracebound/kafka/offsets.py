"""Where a read starts and ends: partitions, watermarks, offsets of a point in time.

Offsets are plain ``{(topic, partition): offset}`` maps, so a caller can keep,
compare and store them (the projections' checkpoints have the same shape).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from tracebound.errors import TransientError

Key = tuple[str, int]
Offsets = dict[Key, int]
METADATA_TIMEOUT_S = 10.0
# A partition just created, or whose leader just moved, answers these for a moment
# although the metadata already names its leader: asked again, it answers.
_SETTLING = frozenset(
    {
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.UNKNOWN_TOPIC_OR_PART,
        KafkaError.REQUEST_TIMED_OUT,
    }
)
_SETTLE_PAUSE_S = 0.25


def partitions(consumer: Any, topic_names: Iterable[str], *, required: bool = False) -> list[Key]:
    """Every partition of ``topic_names`` in order; a missing topic has none.

    ``required``: a missing topic is a ``TransientError`` (it may be created yet).
    """
    meta = consumer.list_topics(timeout=METADATA_TIMEOUT_S)
    found: list[Key] = []
    for topic in topic_names:
        info = meta.topics.get(topic)
        if info is None or info.error is not None:
            if required:
                raise TransientError(f"topic {topic} is not available")
            continue
        found += [(topic, p) for p in sorted(info.partitions)]
    return found


def _watermark(consumer: Any, key: Key) -> tuple[int, int]:
    """One partition's (low, high), asked again while its leadership is settling."""
    deadline = time.monotonic() + METADATA_TIMEOUT_S
    while True:
        try:
            low, high = consumer.get_watermark_offsets(
                TopicPartition(*key), timeout=METADATA_TIMEOUT_S, cached=False
            )
            return int(low), int(high)
        except KafkaException as exc:
            err = exc.args[0] if exc.args else None
            code = err.code() if isinstance(err, KafkaError) else None
            if code not in _SETTLING or time.monotonic() > deadline:
                raise
            time.sleep(_SETTLE_PAUSE_S)


def watermarks(consumer: Any, keys: Iterable[Key]) -> dict[Key, tuple[int, int]]:
    """(low, high) of every partition, asked of the broker (not the cached ones)."""
    return {key: _watermark(consumer, key) for key in keys}


def end_offsets(consumer: Any, topic_names: Iterable[str]) -> Offsets:
    """High watermarks of every partition of ``topic_names`` (missing topics: none)."""
    keys = partitions(consumer, topic_names)
    return {key: high for key, (_low, high) in watermarks(consumer, keys).items()}


def offsets_since(consumer: Any, keys: Iterable[Key], since_ms: int | None) -> Offsets:
    """Per partition the first offset at or after ``since_ms`` (None: the first offset).

    A partition with nothing that recent starts at its end, so a read from there
    sees what is published from now on and nothing older than asked for.
    """
    marks = watermarks(consumer, keys)
    starts = {key: low for key, (low, _high) in marks.items()}
    if since_ms is None or not marks:
        return starts
    asked = [TopicPartition(t, p, since_ms) for t, p in marks]
    for tp in consumer.offsets_for_times(asked, timeout=METADATA_TIMEOUT_S):
        key = (tp.topic, tp.partition)
        starts[key] = max(tp.offset, marks[key][0]) if tp.offset >= 0 else marks[key][1]
    return starts


def assign(consumer: Any, offsets: Mapping[Key, int]) -> None:
    """Read exactly these partitions from these offsets, outside any consumer group."""
    consumer.assign([TopicPartition(t, p, o) for (t, p), o in sorted(offsets.items())])


class PartitionFollower:
    """Keeps a consumer that assigns partitions itself reading new ones as they appear.

    Such a consumer never hears of a partition-count change; a reader of every run
    calls :meth:`follow` after each batch, and every ``interval_s`` it looks for
    partitions added since. Those it reads go on from their current positions (from
    where they were assigned if nothing was read yet), the new ones from their
    first offset: they hold nothing older than the change.
    """

    def __init__(
        self, topic_names: Iterable[str], starts: Mapping[Key, int], interval_s: float = 10.0
    ) -> None:
        self.topic_names = tuple(topic_names)
        self.starts: Offsets = dict(starts)
        self.interval_s = interval_s
        self._next = time.monotonic() + interval_s

    def follow(self, consumer: Any) -> list[Key]:
        """The partitions just added to the assignment (usually none)."""
        if time.monotonic() < self._next:
            return []
        self._next = time.monotonic() + self.interval_s
        new = [key for key in partitions(consumer, self.topic_names) if key not in self.starts]
        if not new:
            return []
        known = [TopicPartition(t, p) for t, p in self.starts]
        for tp in consumer.position(known):
            if tp.offset >= 0:
                self.starts[(tp.topic, tp.partition)] = tp.offset
        self.starts.update(offsets_since(consumer, new, None))
        assign(consumer, self.starts)
        return new


def assign_whole(consumer: Any, topic_names: Iterable[str], *, from_end: bool) -> Offsets:
    """Read every partition of ``topic_names`` from its first offset, or ``from_end``: from
    the end offsets now, so only what is published from now on. A missing topic is a
    ``TransientError``."""
    keys = partitions(consumer, topic_names, required=True)
    marks = watermarks(consumer, keys)
    starts = {key: high if from_end else low for key, (low, high) in marks.items()}
    assign(consumer, starts)
    return starts
