"""Sentinel replicas share the runs as one consumer group: no doubled deadline verdict.

Two replicas watch a stalled pipeline (no executor): every run is given up once,
by the replica owning its partition. Then one replica is killed; the other takes
its partitions over (after the session timeout) and gives up on the new runs,
again once each, without a second verdict for the runs already answered.
"""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from pathlib import Path

from tests.support.kafka_io import Collector
from tests.support.pipeline import running_pipeline
from tests.support.stack import StackHandle
from tracebound import topics
from tracebound.client import AnswerReader, new_request, publish
from tracebound.events import Verdict

SENTINEL_ENV = {
    "TRACEBOUND_SENTINEL_DEADLINE_S": "4",
    "TRACEBOUND_SENTINEL_TICK_S": "0.5",
    "TRACEBOUND_SENTINEL_LOOKBACK_S": "300",
}
RUNS_PER_PHASE = 9  # with 3 partitions, both replicas own some of them


def _deadline_verdicts(verdicts: Collector, run_ids: set[str]) -> Counter[str]:
    return Counter(
        e.run_id
        for e in verdicts.snapshot()
        if isinstance(e, Verdict) and e.verifier_mode == "deadline" and e.run_id in run_ids
    )


def _ask(stack: StackHandle, reader: AnswerReader, count: int) -> set[str]:
    asked = [new_request(f"payment-service HighCPUUsage {n}?") for n in range(count)]
    publish(stack.kafka, asked)
    run_ids = {r.run_id for r in asked}
    answers = reader.wait_for(run_ids, timeout_s=150)
    assert set(answers) == run_ids, "every stalled run is answered"
    assert {a.final_status for a in answers.values()} == {"failed"}
    return run_ids


def _both_watching(tmp_path: Path, timeout_s: float) -> bool:
    """Both replicas were given partitions (the group's second cooperative round)."""
    logs = [tmp_path / r / "services" / "sentinel.log" for r in "ab"]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if all(p.exists() and "watching partitions" in p.read_text() for p in logs):
            return True
        time.sleep(0.5)
    return False


def test_two_sentinel_replicas_give_up_once_and_survive_a_kill(
    stack: StackHandle, tmp_path: Path
) -> None:
    reader = AnswerReader(stack.kafka)
    verdicts = Collector(stack.kafka, topics.VERDICTS, from_end=True)
    stalled = ("planner", "composer")  # the executor is not running: runs stall
    try:
        with (
            running_pipeline(stack, tmp_path / "roles", roles=stalled),
            running_pipeline(
                stack,
                tmp_path / "a",
                {**SENTINEL_ENV, "TRACEBOUND_SENTINEL_REPLICA_ID": "a"},
                roles=("sentinel",),
            ),
            running_pipeline(
                stack,
                tmp_path / "b",
                {**SENTINEL_ENV, "TRACEBOUND_SENTINEL_REPLICA_ID": "b"},
                roles=("sentinel",),
            ),
        ):
            assert _both_watching(tmp_path, timeout_s=90), "each replica owns a share"
            first = _ask(stack, reader, RUNS_PER_PHASE)
            pid = int((tmp_path / "b" / "services" / "sentinel.pid").read_text().split()[0])
            os.kill(pid, signal.SIGKILL)
            second = _ask(stack, reader, RUNS_PER_PHASE)
            time.sleep(6)  # longer than the deadline: a doubled verdict would show by now
            counts = _deadline_verdicts(verdicts, first | second)
    finally:
        reader.close()
        verdicts.close()
    assert set(counts) == first | second
    assert set(counts.values()) == {1}, f"doubled deadline verdicts: {counts.most_common(3)}"
