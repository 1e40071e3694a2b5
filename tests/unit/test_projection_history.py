"""Slices of history: partition groups, totals, worker counts and the progress line."""

from __future__ import annotations

import io
import os

import pytest

from projections.history import Progress, Slice
from projections.rebuild import worker_count

ENDS = {("a", 0): 10, ("a", 1): 5, ("a", 2): 0, ("b", 0): 7, ("b", 1): 3, ("b", 2): 4}
STARTS = {("a", 0): 2, ("a", 1): 5, ("a", 2): 0, ("b", 0): 0, ("b", 1): 1, ("b", 2): 0}


def test_total_counts_only_what_is_inside_the_slice() -> None:
    assert Slice(STARTS, ENDS).total == 8 + 0 + 0 + 7 + 2 + 4


def test_reading_leaves_out_empty_partitions() -> None:
    assert Slice(STARTS, ENDS).reading() == [("a", 0), ("b", 0), ("b", 1), ("b", 2)]


def test_groups_keep_a_partition_number_together_on_every_topic() -> None:
    whole = Slice(STARTS, ENDS)
    groups = [whole.group(i, 2) for i in range(2)]
    assert set(groups[0].ends) == {("a", 0), ("a", 2), ("b", 0), ("b", 2)}
    assert set(groups[1].ends) == {("a", 1), ("b", 1)}
    assert sum(g.total for g in groups) == whole.total


def test_worker_count_is_bounded_by_the_partition_numbers_read() -> None:
    whole = Slice(STARTS, ENDS)
    assert worker_count(8, whole) == 3
    assert worker_count(2, whole) == 2
    assert worker_count(1, whole) == 1
    assert worker_count(4, Slice({}, {("a", 0): 0})) == 1


def test_the_default_worker_count_is_a_partition_number_each_up_to_two_per_core(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    whole = Slice(STARTS, ENDS)  # three partition numbers
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    assert worker_count(0, whole) == 3
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    assert worker_count(0, whole) == 2
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert worker_count(0, whole) == 2


def test_progress_reports_rate_and_time_left() -> None:
    out = io.StringIO()
    progress = Progress("rebuild", 1000, out, every_s=0.0)
    progress.add(250)
    line = out.getvalue()
    assert line.startswith("rebuild: 250/1,000 events (")
    assert "events/s" in line and "s left" in line
    assert progress.done == 250


def test_progress_is_silent_without_an_output() -> None:
    progress = Progress("replay", 10, None, every_s=0.0)
    progress.add(10)
    assert progress.done == 10
