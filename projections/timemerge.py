"""Read many partitions merged by event time.

``diagnosis_run`` folds the events of a run from nine topics. A consumer left to
itself hands over one partition's backlog long before the next one's, so when
catching up, or in a rebuild, the events of one run arrive thousands of messages
apart and its row is written (and its state read back) once per batch it shows
up in. Merging the partitions by message time keeps a run's events together:
its state stays in the :class:`~projections.store.RunStates` and its row is
written about once.

Messages are queued per partition and let out in time order up to the
*watermark*, the latest time seen on the slowest partition still being read
(plus ``lead_ms``). A partition at its end (end-of-partition event, or a rebuild's
end offset) stops holding the watermark back. Past ``max_bytes`` queued, the
partitions read ahead of the watermark are paused until the queues drain to half. Each
partition's own order is kept, and :meth:`TimeMerge.first_queued` tells the
caller which offsets it has not been handed yet, so a checkpoint never skips a
queued message.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Iterable
from typing import Any

from confluent_kafka import TopicPartition

from tracebound.kafka.errors import Severity, classify

Key = tuple[str, int]
NOT_YET = -1  # nothing read yet: behind everything


class TimeMerge:
    def __init__(self, lead_ms: int = 1000, max_bytes: int = 64 << 20) -> None:
        self._lead_ms = lead_ms
        self._max_bytes = max_bytes
        self._bytes = 0
        self._queues: dict[Key, deque[Any]] = {}
        self._last: dict[Key, int] = {}  # partitions still being read → latest time seen
        self._paused: set[Key] = set()

    def track(self, keys: Iterable[Key]) -> None:
        for key in keys:
            self._queues[key] = deque()
            self._last[key] = NOT_YET
            self._paused.discard(key)

    def forget(self, keys: Iterable[Key]) -> None:
        """Drop partitions (revoked, or about to be re-read from elsewhere) and their queues."""
        for key in keys:
            self._bytes -= sum(_size(m) for m in self._queues.pop(key, ()))
            self._last.pop(key, None)
            self._paused.discard(key)

    def done(self, key: Key) -> None:
        """``key`` reached its end: it no longer holds the watermark back."""
        self._last.pop(key, None)

    def add(self, messages: Iterable[Any]) -> None:
        for message in messages:
            key = (message.topic(), message.partition())
            err = message.error()
            if err is not None:
                if classify(err) is Severity.END_OF_PARTITION and key in self._queues:
                    self.done(key)
                continue
            queue = self._queues.get(key)
            if queue is None:
                continue  # not (or no longer) ours
            queue.append(message)
            self._bytes += _size(message)
            self._last[key] = max(_time(message), self._last.get(key, NOT_YET))

    def take(self, limit: int) -> list[Any]:
        """Up to ``limit`` queued messages at or below the watermark, in time order."""
        watermark = min(self._last.values(), default=None)
        bound = None if watermark is None else watermark + self._lead_ms
        heads = [(_time(q[0]), key) for key, q in self._queues.items() if q]
        heapq.heapify(heads)
        out: list[Any] = []
        while heads and len(out) < limit:
            stamp, key = heapq.heappop(heads)
            if bound is not None and stamp > bound:
                break
            queue = self._queues[key]
            message = queue.popleft()
            self._bytes -= _size(message)
            out.append(message)
            if queue:
                heapq.heappush(heads, (_time(queue[0]), key))
        return out

    def first_queued(self, key: Key) -> int | None:
        """Offset of the first message of ``key`` not handed out yet (None: none queued)."""
        queue = self._queues.get(key)
        return queue[0].offset() if queue else None

    def queued(self) -> int:
        return sum(len(q) for q in self._queues.values())

    def pace(self, consumer: Any) -> None:
        """Past ``max_bytes`` queued, pause the partitions read ahead of the watermark;
        resume them once the queues are down to half.

        The slowest partition holds the watermark, so it is never left paused.
        """
        slowest = min(self._last, key=self._last.__getitem__, default=None)
        if slowest in self._paused:
            consumer.resume([TopicPartition(*slowest)])
            self._paused.discard(slowest)
        if self._bytes > self._max_bytes and slowest is not None:
            bound = self._last[slowest] + self._lead_ms
            stop = {k for k, t in self._last.items() if t > bound and self._queues[k]}
            stop -= self._paused
            if stop:
                consumer.pause([TopicPartition(t, p) for t, p in sorted(stop)])
                self._paused |= stop
        elif self._paused and self._bytes <= self._max_bytes // 2:
            consumer.resume([TopicPartition(t, p) for t, p in sorted(self._paused)])
            self._paused.clear()


def _size(message: Any) -> int:
    value = message.value()
    return len(value) if value else 0


def _time(message: Any) -> int:
    _, stamp = message.timestamp()
    return int(stamp)
