"""A store looks at its data set on first use and then once per interval, not per search."""

from __future__ import annotations

import pytest

from services.executor.tools.pg import Connection, SeedCheck


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_data_set_is_checked_on_first_use_then_once_per_interval() -> None:
    clock = _Clock()
    check = SeedCheck(interval_s=30.0, clock=clock)
    calls: list[object] = []
    conn = object()

    def ensure_ready(c: Connection) -> bool:
        calls.append(c)
        return False

    check.ready(conn, ensure_ready)  # type: ignore[arg-type]
    check.ready(conn, ensure_ready)  # type: ignore[arg-type]
    assert calls == [conn], "checked once on first use, not again at once"
    clock.now += 29.9
    check.ready(conn, ensure_ready)  # type: ignore[arg-type]
    assert len(calls) == 1
    clock.now += 0.1
    check.ready(conn, ensure_ready)  # type: ignore[arg-type]
    assert len(calls) == 2, "checked again once the interval has passed"


def test_a_failed_check_is_tried_again_on_the_next_search() -> None:
    check = SeedCheck(interval_s=30.0, clock=_Clock())
    attempts: list[int] = []

    def failing(_c: Connection) -> bool:
        attempts.append(1)
        raise RuntimeError("database away")

    for _ in range(2):
        with pytest.raises(RuntimeError):
            check.ready(object(), failing)  # type: ignore[arg-type]
    assert len(attempts) == 2
