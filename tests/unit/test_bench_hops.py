"""The open loop's hop accounting: each run's time split along the path, and its tail."""

from __future__ import annotations

import pytest

from bench.hops import PATH, Seen, hop_times, lines, slowest, summary


def _run(
    start: float, made_after: float, commit_s: float
) -> tuple[dict[tuple[str, str], Seen], dict[bytes, float]]:
    """One run's messages: each role makes its output ``made_after`` s after its input
    is visible, produces it 1 ms later and it is visible ``commit_s`` after that."""
    seen: dict[tuple[str, str], Seen] = {}
    made: dict[bytes, float] = {}
    visible = start + 0.002
    seen[(PATH[0][1], "r")] = Seen(round((start + 0.001) * 1000), visible, b"request")
    for role, topic in PATH[1:]:
        value = role.encode()
        made[value] = visible + made_after
        created = made[value] + 0.001
        visible = created + commit_s
        seen[(topic, "r")] = Seen(round(created * 1000), visible, value)
    return seen, made


def test_every_hop_of_a_run_adds_up_to_its_latency() -> None:
    seen, made = _run(1000.0, 0.004, 0.010)
    received = seen[(PATH[-1][1], "r")].visible_s + 0.003
    runs = hop_times(lambda _t, v: made[v], seen, {"r": 1000.0}, {"r": received})
    hops = runs["r"]
    assert list(hops)[:2] == ["send", "request visible"]
    assert hops["planner read"] == pytest.approx(4.0)
    assert hops["executor hold"] == pytest.approx(1.0, abs=0.01)
    assert hops["composer commit"] == pytest.approx(10.0, abs=0.01)
    assert hops["answer read"] == pytest.approx(3.0)
    assert sum(hops.values()) == pytest.approx((received - 1000.0) * 1000, abs=0.01)


def test_a_run_missing_a_stage_or_its_answer_is_left_out() -> None:
    seen, made = _run(1000.0, 0.004, 0.010)
    received = seen[(PATH[-1][1], "r")].visible_s
    del seen[(PATH[2][1], "r")]
    assert hop_times(lambda _t, v: made[v], seen, {"r": 1000.0}, {"r": received}) == {}
    seen, made = _run(1000.0, 0.004, 0.010)
    assert hop_times(lambda _t, v: made[v], seen, {"r": 1000.0}, {}) == {}


def test_the_tail_names_the_hop_that_stalled() -> None:
    runs = {f"r{i}": {"send": 1.0, "planner read": 5.0, "composer hold": 2.0} for i in range(99)}
    runs["stalled"] = {"send": 1.0, "planner read": 5.0, "composer hold": 400.0}
    assert slowest(runs) == {"send": 1.0, "planner read": 5.0, "composer hold": 400.0}
    stats = summary(runs)
    assert stats["composer hold"]["p50"] == 2.0
    every, tail = lines(runs)
    assert every.startswith("open loop hops (p50/p99 ms, 100 runs): send 1/1")
    assert tail.endswith("composer hold 400")
