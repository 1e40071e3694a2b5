"""Health is progress: a loop that keeps aborting or sits on lag is stuck, and a role
that died is started again after a back-off, with its crash reason kept for status."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pytest

from tracebound.runtime.progress import STUCK_AFTER_FAILURES, Progress, read_progress
from tracebound.settings import StackSettings
from tracebound.stack import keeper as keeper_module
from tracebound.stack import services
from tracebound.stack.crashes import read_crashes
from tracebound.stack.keeper import BACKOFF_S, Keeper, crash_reason
from tracebound.stack.service_env import EnvRecord, write_record
from tracebound.stack.services import ServiceState


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_loop_that_keeps_failing_is_stuck_until_it_commits() -> None:
    progress = Progress(stuck_after_s=60, clock=Clock())
    for _ in range(STUCK_AFTER_FAILURES - 1):
        progress.failed("transaction aborted: MSG_SIZE_TOO_LARGE")
    assert not progress.state().stuck
    progress.failed("transaction aborted: MSG_SIZE_TOO_LARGE")
    state = progress.state()
    assert state.stuck and "in a row" in state.reason
    assert state.last_error == "transaction aborted: MSG_SIZE_TOO_LARGE"
    progress.committed()
    assert not progress.state().stuck


def test_lag_without_a_commit_for_the_poll_interval_is_stuck() -> None:
    clock = Clock()
    progress = Progress(stuck_after_s=60, clock=clock)
    clock.now += 120
    assert not progress.state().stuck  # idle: nothing to read
    progress.lag(3)
    state = progress.state()
    assert state.stuck and state.reason.startswith("lag 3 and no commit for 120s")
    progress.committed()
    assert not progress.state().stuck


def test_progress_is_read_back_as_the_process_wrote_it(tmp_path: Path) -> None:
    path = tmp_path / "services" / "progress" / "42.json"
    path.parent.mkdir(parents=True)
    state = Progress(stuck_after_s=1, clock=Clock()).state()
    path.write_text(json.dumps(state.to_json()))
    assert read_progress(tmp_path, 42) == state
    assert read_progress(tmp_path, 43) is None


def test_the_crash_reason_is_the_last_error_of_the_log(tmp_path: Path) -> None:
    log = tmp_path / "composer.log"
    lines = [
        {"level": "info", "msg": "service started"},
        {
            "level": "error",
            "msg": "composer failed",
            "exc": "Traceback (most recent call last):\n"
            "  ...\nOverflowError: date value out of range",
        },
        {"level": "info", "msg": "service stopped"},
    ]
    log.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    assert crash_reason(log) == "composer failed: OverflowError: date value out of range"
    log.write_text("Traceback (most recent call last):\nMemoryError: out of memory\n")
    assert crash_reason(log) == "MemoryError: out of memory"
    log.write_text(json.dumps({"level": "info", "msg": "bye"}) + "\n")
    assert crash_reason(log) == "it exited without logging an error"
    assert crash_reason(tmp_path / "missing.log") == "its log cannot be read"


class FakeServices:
    """The three calls the keeper makes of the stack's services module."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.alive: dict[str, int | None] = {"composer": None, "planner": 7}
        self.launched: list[tuple[str, int, Mapping[str, str]]] = []

    def services_folder(self, settings: StackSettings) -> Path:
        return self.folder

    def wanted_units(self, settings: StackSettings) -> list[tuple[str, int, str]]:
        return [("planner", 1, "planner"), ("composer", 1, "composer")]

    def unit_pid(
        self, settings: StackSettings, role: str, index: int
    ) -> tuple[int | None, list[str]]:
        return self.alive[role], []

    def launch_unit(
        self, settings: StackSettings, role: str, env: Mapping[str, str], index: int = 1
    ) -> int:
        self.launched.append((role, index, env))
        self.alive[role] = 99
        return 99


def test_a_dead_role_is_started_again_after_its_back_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeServices(tmp_path)
    monkeypatch.setattr(keeper_module, "services", fake)
    (tmp_path / "composer.log").write_text(
        json.dumps({"level": "error", "msg": "composer failed", "exc": "X\nKeyError: 'a'"}) + "\n"
    )
    keeper = Keeper(StackSettings(state_dir=tmp_path / "state"), {"TRACEBOUND_PG_DSN": "1"})
    assert keeper.check(0.0) == []  # seen dead: the back-off starts
    noted = read_crashes(tmp_path, "composer")
    assert noted is not None and noted["last_reason"] == "composer failed: KeyError: 'a'"
    assert noted["restarts"] == 0
    assert keeper.check(BACKOFF_S[0] / 2) == []
    assert keeper.check(BACKOFF_S[0] + 0.1) == ["restarted composer (pid 99)"]
    assert fake.launched == [("composer", 1, {"TRACEBOUND_PG_DSN": "1"})]
    noted = read_crashes(tmp_path, "composer")
    assert noted is not None and noted["restarts"] == 1
    fake.alive["composer"] = None  # dies again at once: a longer back-off
    assert keeper.check(2.0) == []
    assert keeper.check(2.0 + BACKOFF_S[0] + 0.1) == []
    assert keeper.check(2.0 + BACKOFF_S[1] + 0.1) == ["restarted composer (pid 99)"]


def test_a_death_seen_once_does_not_skip_the_back_off_of_a_later_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # seen dead for a moment (a stop between its exit and its record's removal), then
    # running again (started by someone else): a later death waits its own back-off
    fake = FakeServices(tmp_path)
    monkeypatch.setattr(keeper_module, "services", fake)
    keeper = Keeper(StackSettings(state_dir=tmp_path / "state"), {})
    assert keeper.check(0.0) == []
    fake.alive["composer"] = 12
    assert keeper.check(2.0) == []
    fake.alive["composer"] = None
    assert keeper.check(600.0) == []  # not at once: the old back-off is over, this one starts
    assert fake.launched == []


def test_a_wanted_service_that_is_not_running_is_down_with_its_reason() -> None:
    down = ServiceState(
        "composer", False, None, "c.log", None, wanted=True, crashes={"last_reason": "boom"}
    )
    assert (down.state, down.healthy, down.problem) == ("down", False, "composer is down: boom")
    stopped = ServiceState("composer", False, None, "c.log", None)
    assert (stopped.state, stopped.healthy) == ("stopped", True)


def test_stopping_a_role_that_is_down_forgets_it_so_the_keeper_leaves_it_stopped(
    tmp_path: Path,
) -> None:
    settings = StackSettings(state_dir=tmp_path / "state")
    folder = services.services_folder(settings)
    folder.mkdir(parents=True)
    write_record(folder, EnvRecord.of("verifier", 4242, {}), "verifier")
    assert ("verifier", 1, "verifier") in services.wanted_units(settings)
    said = services.stop_services(settings, ("verifier",))
    assert said == ["verifier was down; no longer kept running"]
    assert ("verifier", 1, "verifier") not in services.wanted_units(settings)
