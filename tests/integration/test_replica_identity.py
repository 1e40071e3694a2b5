"""Replica identity on the real broker: a duplicate id is refused loudly, never a fencing loop.

The whole pipeline runs with the planner's replica id set to ``twin``; a second
planner with that id is started as ``tracebound up`` starts one (a private
state folder):

* on the same host, the second exits with "another process uses
  transactional.id planner-twin" and the first keeps answering;
* from "another host" (its own temporary folder, so the host lock is not
  shared), the two take the group membership of the id from each other until
  the first, replaced three times, exits with that message; the newcomer
  answers instead. Either way one planner is left, and it answers.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.support.kafka_io import request_event
from tests.support.pipeline import running_pipeline
from tests.support.stack import StackHandle
from tracebound.client import AnswerReader, publish
from tracebound.settings import StackSettings
from tracebound.stack.services import start_services, stop_services

pytestmark = pytest.mark.integration

TWIN = {"TRACEBOUND_PLANNER_REPLICA_ID": "twin"}
MESSAGE = "another process uses transactional.id planner-twin"
EXIT_WAIT_S = 120.0  # a hang guard, not a timing assertion


def _pid(state: Path) -> int:
    return int((state / "services" / "planner.pid").read_text().strip())


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie of ours is not alive either
        finished, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return finished == 0


def _wait_gone(pid: int) -> float:
    began = time.monotonic()
    while _alive(pid) and time.monotonic() - began < EXIT_WAIT_S:
        time.sleep(0.2)
    assert not _alive(pid), f"planner {pid} still runs after {EXIT_WAIT_S:.0f}s"
    return time.monotonic() - began


def _answers(stack: StackHandle, query: str) -> None:
    asked = request_event(query)
    reader = AnswerReader(stack.kafka)
    try:
        publish(stack.kafka, [asked])
        answers = reader.wait_for({asked.run_id}, timeout_s=120)
    finally:
        reader.close()
    assert asked.run_id in answers, "the planner left running did not answer"


@pytest.mark.timeout(420)
def test_a_duplicate_replica_id_leaves_one_planner_that_answers(
    stack: StackHandle, tmp_path: Path
) -> None:
    env = {k: v for k, v in stack.env().items() if k.startswith("TRACEBOUND_")} | TWIN
    first_state, twin_state = tmp_path / "first", tmp_path / "twin"
    twin = StackSettings(state_dir=twin_state)
    with running_pipeline(stack, first_state, env=TWIN):
        first = _pid(first_state)
        _answers(stack, "Why is checkout-service slow?")

        start_services(twin, env, ("planner",))  # same host: the lock is taken
        took = _wait_gone(_pid(twin_state))
        log = (twin_state / "services" / "planner.log").read_text()
        assert MESSAGE in log, log[-2000:]
        assert _alive(first), "the first planner died when the duplicate was refused"
        _answers(stack, "Why is checkout-service slow?")
        print(f"\nsame host: the duplicate exited after {took:.1f}s")

        other_host = tmp_path / "other-host"
        other_host.mkdir()
        try:
            start_services(twin, {**env, "TMPDIR": str(other_host)}, ("planner",))
            took = _wait_gone(first)
            log = (first_state / "services" / "planner.log").read_text()
            assert MESSAGE in log, log[-2000:]
            assert _alive(_pid(twin_state)), "the newcomer died as well"
            _answers(stack, "Why is payment-service failing?")
            print(f"another host: the replaced planner exited after {took:.1f}s")
        finally:
            stop_services(twin, ("planner",))
