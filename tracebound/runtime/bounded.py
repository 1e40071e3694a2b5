"""Client calls with a hard deadline, for librdkafka calls that can outlive their own.

Some transactional calls (``send_offsets_to_transaction`` while the group
coordinator restarts) can block past their timeout. The call runs on a worker
thread; if it overruns, the loop abandons the clients and builds new ones — the
new producer's ``init_transactions`` fences the wedged one, so nothing it still
holds can ever commit.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

STUCK_GRACE_S = 5.0


class ClientStuckError(Exception):
    """A librdkafka call overran its own timeout (the client is wedged)."""


class BoundedCalls:
    """One worker thread for client calls; replaced when a call is abandoned."""

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="kafka-call")

    def run(self, call: Callable[[], None], timeout: float) -> None:
        """``call()``, raising :class:`ClientStuckError` past ``timeout`` and a grace."""
        future: Future[None] = self._pool.submit(call)
        try:
            future.result(timeout + STUCK_GRACE_S)
        except FutureTimeout as exc:
            raise ClientStuckError(f"Kafka client call overran {timeout:.0f}s") from exc

    def abandon(self) -> None:
        """Leave a wedged call behind on its thread; later calls get a fresh one."""
        self._pool.shutdown(wait=False)
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="kafka-call")

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False)
