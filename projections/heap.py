"""Garbage-collector settings for processes that fold many events into a large heap.

A projection catching up, a rebuild and a replay allocate a few container
objects per decoded event and keep many of them alive (run states, queued
messages). CPython's default thresholds (700 allocations) then start a
collection every few events, and each older-generation pass walks the whole
heap: about a third of a catch-up was collector time. Almost none of that heap
is cyclic garbage, so the work is wasted:

- :func:`gc.freeze` moves everything alive after start-up (modules, schemas,
  settings) out of the collector's sight for good;
- a young-generation threshold of tens of thousands of allocations makes
  collections rare while still reclaiming the cycles that do occur, with the
  memory they hold bounded by the threshold.

The projection process also folds in one thread per read model. glibc's
allocator gives each thread an arena of its own (up to eight per core), and
memory freed in one arena is not reused by the others, so a catch-up's peak
resident size grew with the thread count; :func:`share_allocator_arenas` caps
the arenas before the threads start (where the C library is glibc; elsewhere it
does nothing).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc

YOUNG_THRESHOLD = 50_000
OLDER_THRESHOLDS = (20, 20)


def tune_collector() -> None:
    """Freeze what start-up allocated and raise the collection thresholds (idempotent)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_THRESHOLD, *OLDER_THRESHOLDS)


M_ARENA_MAX = -8  # glibc's mallopt parameter number
ARENAS = 2


def share_allocator_arenas(arenas: int = ARENAS) -> bool:
    """Cap glibc's malloc arenas (before threads start); whether it took effect."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        libc = ctypes.CDLL(name)
        return bool(libc.mallopt(M_ARENA_MAX, arenas))
    except (OSError, AttributeError):
        return False
