"""When a projection worker commits its window (``projections.runner.window_due``)."""

from __future__ import annotations

from projections.runner import window_due
from projections.settings import ProjectionRuntimeSettings

RUNTIME = ProjectionRuntimeSettings(
    commit_interval_ms=1000, commit_max_messages=2000, commit_min_ms=250
)


def test_without_a_window_only_an_idle_worker_looks_at_its_checkpoints() -> None:
    assert window_due(RUNTIME, None, 10.0, 0, more_waiting=False)
    assert not window_due(RUNTIME, None, 10.0, 0, more_waiting=True)


def test_a_trickle_is_written_once_the_window_is_old_enough() -> None:
    assert not window_due(RUNTIME, 10.0, 10.1, 3, more_waiting=False)
    assert window_due(RUNTIME, 10.0, 10.25, 3, more_waiting=False)


def test_while_input_keeps_coming_the_window_ends_by_time_or_size() -> None:
    assert not window_due(RUNTIME, 10.0, 10.5, 1999, more_waiting=True)
    assert window_due(RUNTIME, 10.0, 10.5, 2000, more_waiting=True)
    assert window_due(RUNTIME, 10.0, 11.0, 1, more_waiting=True)


def test_no_minimum_writes_as_soon_as_nothing_is_waiting() -> None:
    eager = ProjectionRuntimeSettings(commit_min_ms=0)
    assert window_due(eager, 10.0, 10.0, 1, more_waiting=False)
