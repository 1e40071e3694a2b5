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
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 50_000
OLDER_THRESHOLDS = (20, 20)


def tune_collector() -> None:
    """Freeze what start-up allocated and raise the collection thresholds (idempotent)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_THRESHOLD, *OLDER_THRESHOLDS)
