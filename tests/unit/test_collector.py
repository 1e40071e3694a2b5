"""The collector settings of running loops: applied by the first, restored by the last."""

from __future__ import annotations

import gc

from tracebound.collector import OLDER_THRESHOLDS, YOUNG_THRESHOLD, tuned_collector


def test_settings_hold_while_any_loop_runs_and_are_restored_after() -> None:
    before = gc.get_threshold()
    tuned = (YOUNG_THRESHOLD, *OLDER_THRESHOLDS)
    with tuned_collector():
        assert gc.get_threshold() == tuned
        assert gc.get_freeze_count() > 0
        with tuned_collector():
            assert gc.get_threshold() == tuned
        assert gc.get_threshold() == tuned  # the outer loop still runs
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_settings_are_restored_when_the_loop_fails() -> None:
    before = gc.get_threshold()
    try:
        with tuned_collector():
            raise RuntimeError("the loop crashed")
    except RuntimeError:
        pass
    assert gc.get_threshold() == before
