"""Garbage-collector settings for processes that handle many events.

Every event read allocates a few dozen container objects (records, models,
lists), and a projection catching up, a rebuild or a replay keeps many of them
alive (run states, queued messages). CPython's default threshold (700
allocations) then starts a collection every few events, and each pass of an
older generation walks everything the process has alive: modules, schemas,
compiled models, the clients' state, the held events (about a third of a
catch-up was collector time). That work finds almost nothing to free, so:

- what start-up allocated is frozen out of the collector's sight
  (:func:`gc.freeze`);
- the youngest generation is collected every tens of thousands of allocations,
  which still reclaims the cycles that do occur (a dead letter's exception and
  its frames) with the memory they hold bounded by the threshold.

:func:`tune_collector` applies this for the rest of a process's life (the
projection process, a rebuild worker, ``replay``); :func:`tuned_collector` for a
block, which a service loop uses: loops sharing a process (tests, the bench)
share the settings, the first to start applies them and the last to stop puts
the previous ones back.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

YOUNG_THRESHOLD = 50_000
OLDER_THRESHOLDS = (20, 20)
MALLOC_ARENAS = 2
_M_ARENA_MAX = -8  # glibc's mallopt() parameter number


def limit_malloc_arenas(arenas: int = MALLOC_ARENAS) -> bool:
    """Cap glibc's malloc arenas at ``arenas``; returns whether the C library took it.

    glibc gives a thread that meets contention on the heap an arena of its own, up to
    eight per core, and memory freed in an arena stays with it. A process of many
    threads that each allocate a lot (a projection worker per read model, several
    client threads per Kafka consumer) then holds far more than it uses: the
    projection process's peak while catching up dropped by about a sixth with two
    arenas, at no cost in speed. Call it before the process starts any thread (glibc
    fixes the cap when the first extra arena is made); ``MALLOC_ARENA_MAX`` in the
    environment wins, and other C libraries are left alone.
    """
    if os.environ.get("MALLOC_ARENA_MAX"):
        return False
    try:
        mallopt = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(_M_ARENA_MAX, arenas))


def tune_collector() -> None:
    """Freeze what start-up allocated and raise the collection thresholds (idempotent)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_THRESHOLD, *OLDER_THRESHOLDS)


class _Settings:
    """The process's collector settings, shared by the loops running in it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running = 0
        self._previous: tuple[int, ...] = ()

    def enter(self) -> None:
        with self._lock:
            if self._running == 0:
                self._previous = gc.get_threshold()
                tune_collector()
            self._running += 1

    def leave(self) -> None:
        with self._lock:
            self._running -= 1
            if self._running == 0:
                gc.set_threshold(*self._previous)
                gc.unfreeze()


_SETTINGS = _Settings()


@contextmanager
def tuned_collector() -> Iterator[None]:
    """Apply the loop's collector settings for the duration of the block."""
    _SETTINGS.enter()
    try:
        yield
    finally:
        _SETTINGS.leave()


__all__ = [
    "MALLOC_ARENAS",
    "OLDER_THRESHOLDS",
    "YOUNG_THRESHOLD",
    "limit_malloc_arenas",
    "tune_collector",
    "tuned_collector",
]
