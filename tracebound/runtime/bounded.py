"""Client calls with a hard deadline, for librdkafka calls that can outlive their own.

Some transactional calls (``send_offsets_to_transaction`` while the group
coordinator's broker is down) can block past their timeout. The calls of one
transaction run on a worker thread under one bound, kept near the consumer's
session timeout rather than the transaction timeout: an open transaction holds
back the last stable offset of every partition it wrote, so downstream readers
see nothing of those partitions until it ends. If the bound passes, the loop
abandons the clients and builds new ones at once — the new producer's
``init_transactions`` fences the wedged one and makes the coordinator abort its
open transaction, which releases the last stable offset without waiting for the
transaction timeout, and nothing the wedged producer still holds can commit.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from confluent_kafka import KafkaException

from tracebound.kafka import Severity, severity_of

log = logging.getLogger("tracebound.runtime")

# Past the bound, librdkafka's own timeout (given what is left of the bound) had
# its chance to fail the call with a proper error; this much more means it is wedged.
STUCK_GRACE_S = 1.0
# A call is never given less than this: librdkafka treats 0 as "do not wait at all".
MIN_CALL_S = 0.5
# How long abandoned clients get to close before the new ones are built: a consumer
# whose group coordinator is gone would otherwise hold up the rebuild until it gives up.
ABANDON_CLOSE_S = 2.0


class ClientStuckError(Exception):
    """A librdkafka call overran its own timeout (the client is wedged)."""


class Deadline:
    """One bound shared by the consecutive client calls of a transaction."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._end = clock() + seconds

    def left(self) -> float:
        """Seconds to give the next call: what remains, but never less than a minimum."""
        return max(self._end - self._clock(), MIN_CALL_S)

    def passed(self) -> bool:
        return self._clock() >= self._end


class _CallThread:
    """One daemon thread running submitted calls in order.

    A daemon, unlike a ``ThreadPoolExecutor`` worker, is not joined when the
    process exits: a wedged librdkafka call left behind on it cannot hold up the
    exit of a role that stopped cleanly.
    """

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[tuple[Future[None], Callable[[], None]] | None] = (
            queue.SimpleQueue()
        )
        threading.Thread(target=self._serve, name="kafka-call", daemon=True).start()

    def submit(self, call: Callable[[], None]) -> Future[None]:
        future: Future[None] = Future()
        self._queue.put((future, call))
        return future

    def stop(self) -> None:
        """End the thread once the calls queued so far are done (a wedged one never is)."""
        self._queue.put(None)

    def _serve(self) -> None:
        while (item := self._queue.get()) is not None:
            future, call = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                call()
            except BaseException as exc:  # handed to the caller through the future
                future.set_exception(exc)
            else:
                future.set_result(None)


class BoundedCalls:
    """One worker thread for client calls; replaced when a call is abandoned."""

    def __init__(self, grace_s: float = STUCK_GRACE_S) -> None:
        self._grace_s = grace_s
        self._thread = _CallThread()

    def run(self, call: Callable[[], None], timeout: float) -> None:
        """``call()``, raising :class:`ClientStuckError` past ``timeout`` and a grace."""
        future = self._thread.submit(call)
        try:
            future.result(timeout + self._grace_s)
        except FutureTimeout as exc:
            raise ClientStuckError(f"Kafka client call overran {timeout:.1f}s") from exc

    def abandon(self) -> None:
        """Leave a wedged call behind on its thread; later calls get a fresh one."""
        self._thread.stop()
        self._thread = _CallThread()

    def shutdown(self) -> None:
        self._thread.stop()


def commit_within(producer: Any, deadline: Deadline) -> None:
    """Commit the open transaction, retrying retriable errors until ``deadline``."""
    while True:
        try:
            producer.commit_transaction(deadline.left())
            return
        except KafkaException as exc:
            if severity_of(exc) is Severity.RETRIABLE and not deadline.passed():
                log.warning("commit retriable error, retrying: %s", exc)
                time.sleep(0.5)
                continue
            raise


def close_within(consumer: Any, seconds: float = ABANDON_CLOSE_S) -> None:
    """Close an abandoned consumer, waiting no longer than ``seconds`` for it."""
    closer = threading.Thread(target=consumer.close, name="consumer-close", daemon=True)
    closer.start()
    closer.join(seconds)
