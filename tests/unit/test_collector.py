"""The collector settings of running loops: applied by the first, restored by the last."""

from __future__ import annotations

import gc
import platform

import pytest

from tracebound.collector import (
    OLDER_THRESHOLDS,
    YOUNG_THRESHOLD,
    limit_malloc_arenas,
    tuned_collector,
)


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


def test_an_arena_cap_in_the_environment_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert limit_malloc_arenas() is False


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_glibc_takes_the_arena_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    assert limit_malloc_arenas(16) is True  # 16: no tighter than a 2-core default
