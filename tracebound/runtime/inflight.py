"""The handler calls of one batch, several in flight at once.

A role that waits seconds on a model per input gets its throughput from
overlapping those waits, not from CPU, so the calls of one batch run on a pool
of threads (handlers are synchronous and pure; the model client is thread-safe).
What the loop commits does not change: it still gets one outcome per input, in
input order, and publishes them with the batch's offsets in one transaction.
The work a call does may include encoding its outputs: that CPU then overlaps
with the other calls' waits instead of holding the commit up after the last one.

Inputs with the same Kafka key (a run id) run one after the other, in order, on
one thread: a handler that remembers something per run (the composer's "already
answered") then never sees two inputs of one run at the same time. With one
worker the calls run inline on the loop's thread, exactly as before.

A call that raises ``TransientError`` fails the batch, but only after
every call already running has returned: the loop then forgets or retries the
whole batch, and no late call may touch a handler's memory behind its back.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from threading import Event as Flag
from typing import Any, TypeVar

from tracebound.errors import HandlerCrashed, PoisonInput, TransientError
from tracebound.events import Event

T = TypeVar("T")
BEAT_S = 1.0


def call(work: Callable[[Event], T], event: Event) -> T | PoisonInput:
    """What ``work`` makes of ``event``, or the reason it cannot be processed.

    A ``TransientError`` propagates (the loop retries the batch). Any other
    exception is returned as :class:`HandlerCrashed`, with the original as its
    cause: the loop reads the input once more before it calls that poison.
    """
    try:
        return work(event)
    except PoisonInput as exc:
        return exc
    except TransientError:
        raise
    except Exception as exc:
        crashed = HandlerCrashed(f"{type(exc).__name__}: {exc}")
        crashed.__cause__ = exc
        return crashed


class InFlight:
    """Runs the handler calls of a batch on up to ``concurrency`` threads."""

    def __init__(self, concurrency: int, heartbeat: Callable[[], None] = lambda: None) -> None:
        self.concurrency = concurrency
        self._heartbeat = heartbeat
        self._pool = (
            ThreadPoolExecutor(concurrency, thread_name_prefix="handler")
            if concurrency > 1
            else None
        )

    def outcomes(
        self, work: Callable[[Event], T], calls: Sequence[tuple[Any, Event]]
    ) -> list[T | PoisonInput]:
        """One outcome per ``(key, event)``, in the order given."""
        if self._pool is None:
            return [call(work, event) for _, event in calls]
        chains: dict[Any, list[int]] = {}
        for index, (key, _event) in enumerate(calls):
            chains.setdefault(index if key is None else key, []).append(index)
        failed = Flag()

        def run(indexes: list[int]) -> list[T | PoisonInput]:
            out: list[T | PoisonInput] = []
            for index in indexes:
                if failed.is_set():
                    break
                try:
                    out.append(call(work, calls[index][1]))
                except BaseException:
                    failed.set()
                    raise
            return out

        futures = [(chain, self._pool.submit(run, chain)) for chain in chains.values()]
        self._wait([f for _, f in futures])
        results: list[T | PoisonInput | None] = [None] * len(calls)
        for chain, future in futures:
            for index, outcome in zip(chain, future.result(), strict=False):
                results[index] = outcome
        return [r for r in results if r is not None]

    def _wait(self, futures: Sequence[Future[Any]]) -> None:
        """Wait for every call, beating the heart; once one fails, start no others."""
        pending = set(futures)
        while pending:
            done, pending = wait(pending, timeout=BEAT_S, return_when=FIRST_EXCEPTION)
            self._heartbeat()
            if any(f.exception() is not None for f in done):
                for future in pending:
                    future.cancel()
                wait(pending)
                self._raise_first(futures)

    @staticmethod
    def _raise_first(futures: Sequence[Future[Any]]) -> None:
        for future in futures:
            if not future.cancelled() and future.exception() is not None:
                future.result()  # raises it

    def shutdown(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)


__all__ = ["InFlight", "call"]
