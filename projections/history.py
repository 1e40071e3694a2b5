"""Reading a fixed slice of recorded history as fast as the broker hands it over.

A rebuild and a replay read the same way: every partition of some topics from an
explicit start (its first offset, or the offset of a point in time) up to the end
offsets taken before the read began, in large batches, each batch decoded once.

Why explicit starts: assigning ``OFFSET_BEGINNING`` makes the client look the
offset up itself before its first fetch, half a second per read; the low
watermarks are already known from the broker when the slice is taken. Why a short
fetch wait: at the end of a partition the broker holds an empty fetch for
``fetch.wait.max.ms`` before the client can report the end, and a read of
history has nothing to wait for.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, TextIO

from confluent_kafka import KafkaException

from tracebound import kafka as edge
from tracebound.errors import TransientError
from tracebound.settings import KafkaSettings

Key = tuple[str, int]
Offsets = dict[Key, int]
BATCH = 2000
POLL_S = 0.2
READ_TIMEOUT_S = 600.0
# A read of history: hear where a partition ends, and do not linger at the end.
HISTORY_READ = {**edge.READ_TO_END, "fetch.wait.max.ms": "5"}


@dataclass(frozen=True, slots=True)
class Slice:
    """``[starts, ends)`` of every partition of some topics."""

    starts: Offsets
    ends: Offsets

    @property
    def total(self) -> int:
        """Messages (markers included) inside the slice."""
        return sum(max(end - self.starts.get(key, 0), 0) for key, end in self.ends.items())

    def reading(self) -> list[Key]:
        """The partitions with something inside the slice."""
        return sorted(k for k, end in self.ends.items() if end > max(self.starts.get(k, 0), 0))

    def group(self, index: int, count: int) -> Slice:
        """The partitions numbered ``index`` modulo ``count``, on every topic.

        Topics are co-partitioned by run id, so a group holds every event of its runs.
        """
        keep = {key for key in self.ends if key[1] % count == index}
        return Slice(
            {k: o for k, o in self.starts.items() if k in keep},
            {k: o for k, o in self.ends.items() if k in keep},
        )


def take_slice(
    kafka: KafkaSettings,
    topic_names: Iterable[str],
    *,
    since_ms: int | None = None,
    required: bool = False,
) -> Slice:
    """Everything of ``topic_names`` now: from the first offset (or ``since_ms``) to the end."""
    names = list(topic_names)
    consumer = edge.consumer(kafka, "history")
    try:
        keys = edge.partitions(consumer, names, required=required)
        starts = edge.offsets_since(consumer, keys, since_ms)
        ends = edge.end_offsets(consumer, names)
    except KafkaException as exc:
        raise TransientError(f"cannot read the offsets of {', '.join(names)}: {exc}") from exc
    finally:
        consumer.close()
    return Slice(starts, ends)


class Progress:
    """Events read, events/s and the time left, written at most every ``every_s``."""

    def __init__(
        self, what: str, total: int, out: TextIO | None = sys.stderr, every_s: float = 2.0
    ) -> None:
        self._what, self._total, self._out, self._every_s = what, total, out, every_s
        self._started = self._last = time.monotonic()
        self.done = 0

    def add(self, count: int) -> None:
        self.done += count
        now = time.monotonic()
        if self._out is None or now - self._last < self._every_s:
            return
        self._last = now
        rate = self.done / max(now - self._started, 1e-6)
        left = max(self._total - self.done, 0)
        eta = f", about {left / rate:.0f}s left" if rate > 0 else ""
        print(
            f"{self._what}: {self.done:,}/{self._total:,} events ({rate:,.0f} events/s{eta})",
            file=self._out,
            flush=True,
        )


def read_slice(
    kafka: KafkaSettings,
    part: Slice,
    *,
    batch: int = BATCH,
    timeout_s: float = READ_TIMEOUT_S,
    consumer: Any = None,
) -> Iterator[tuple[list[Any], set[Key]]]:
    """The committed messages of ``part`` in batches of up to ``batch``, each partition in
    order, with the partitions each batch finished.

    The read gives up with ``TransientError`` when nothing arrives for ``timeout_s``.
    ``consumer`` (one made with :data:`HISTORY_READ`) lets the caller pause partitions.
    """
    own = consumer is None
    consumer = consumer or edge.consumer(kafka, "history", config=HISTORY_READ)
    try:
        reader = edge.RangeReader(consumer, part.starts, part.ends)
        quiet_since = time.monotonic()
        while not reader.done:
            reading = set(reader.pending)
            messages = reader.next(batch, POLL_S)
            finished = reading - reader.pending
            if messages or finished:
                quiet_since = time.monotonic()
                yield messages, finished
            elif time.monotonic() - quiet_since > timeout_s:
                raise TransientError(f"reading history stalled ({len(reader.pending)} left)")
    except KafkaException as exc:
        raise TransientError(f"reading history failed: {exc}") from exc
    finally:
        if own:
            consumer.close()
