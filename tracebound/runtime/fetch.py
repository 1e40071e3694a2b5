"""Taking a batch from a consumer without waiting for a full one."""

from __future__ import annotations

from typing import Any


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
