"""Reading messages: take what is ready, read a range to its end, decode the rest.

A read to the end stops at offsets taken *before* it started (the high
watermarks, or the checkpoints a rebuild swaps in): what is published meanwhile
is left for the next read, so the read finishes even while the pipeline runs.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from confluent_kafka import OFFSET_BEGINNING

from tracebound.codec import Codec
from tracebound.errors import PoisonInput, TransientError
from tracebound.events import Event
from tracebound.kafka.errors import Severity, consumer_error
from tracebound.kafka.offsets import Key, assign

log = logging.getLogger("tracebound.kafka")


def next_batch(consumer: Any, max_messages: int, timeout_s: float) -> list[Any]:
    """Wait up to ``timeout_s`` for the first message, then take what is already fetched.

    ``consume(n, timeout)`` waits the whole timeout unless ``n`` messages are ready,
    which would add the timeout to every batch of a lightly loaded consumer and to
    the tail of every backlog; under load the drain still fills whole batches.
    """
    first = consumer.poll(timeout_s)
    if first is None:
        return []
    if max_messages <= 1:
        return [first]
    return [first, *consumer.consume(num_messages=max_messages - 1, timeout=0)]


def decoded(
    codec: Codec,
    messages: Iterable[Any],
    on_poison: Callable[[Any, PoisonInput], None] | None = None,
) -> Iterator[Event]:
    """The events of the data messages; errors, tombstones and poison are passed over.

    Poison is the roles' business (they dead-letter it); a reader only counts or
    logs it through ``on_poison``.
    """
    for message in messages:
        if message.error() is not None or message.value() is None:
            continue
        try:
            yield codec.decode(message.value(), message.topic())
        except PoisonInput as exc:
            if on_poison is not None:
                on_poison(message, exc)


class RangeReader:
    """Reads ``[starts, ends)`` of each partition, assigned outside any group.

    The consumer needs ``enable.partition.eof`` (:data:`~tracebound.kafka.clients.READ_TO_END`):
    a partition whose last messages were transaction markers or aborted output ends
    with an end-of-partition event, not a message at ``end - 1``. A partition
    missing from ``starts`` is read from its beginning.
    """

    def __init__(self, consumer: Any, starts: Mapping[Key, int], ends: Mapping[Key, int]) -> None:
        self._consumer = consumer
        self._ends = dict(ends)
        self.pending: set[Key] = {k for k, end in ends.items() if end > max(starts.get(k, 0), 0)}
        assign(consumer, {k: starts.get(k, OFFSET_BEGINNING) for k in sorted(self.pending)})

    @property
    def done(self) -> bool:
        return not self.pending

    def next(self, max_messages: int, timeout_s: float) -> list[Any]:
        """The next messages inside the range; finished partitions leave ``pending``."""
        inside: list[Any] = []
        for message in next_batch(self._consumer, max_messages, timeout_s):
            key = (message.topic(), message.partition())
            offset = message.offset()
            problem = consumer_error(message)
            if problem is not None:
                if problem is Severity.END_OF_PARTITION and offset >= self._ends.get(key, 0):
                    self.pending.discard(key)
                continue
            if key not in self.pending or offset >= self._ends[key]:
                self.pending.discard(key)
                continue
            inside.append(message)
            if offset + 1 >= self._ends[key]:
                self.pending.discard(key)
        return inside


def read_range(
    consumer: Any,
    starts: Mapping[Key, int],
    ends: Mapping[Key, int],
    *,
    timeout_s: float,
    batch: int = 2000,
) -> Iterator[list[Any]]:
    """The messages of ``[starts, ends)`` in batches; ``TransientError`` past ``timeout_s``."""
    reader = RangeReader(consumer, starts, ends)
    deadline = time.monotonic() + timeout_s
    while not reader.done:
        if time.monotonic() > deadline:
            raise TransientError(f"reading topics timed out ({len(reader.pending)} left)")
        messages = reader.next(batch, 0.5)
        if messages:
            yield messages
