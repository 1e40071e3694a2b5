"""Every request ends in exactly one answer, also when a stage stops moving."""

from __future__ import annotations

import socket
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from tests.support.kafka_io import Collector, TopicTail, pass_over
from tests.support.pipeline import ROLES, running_pipeline
from tests.support.samples import sample
from tests.support.stack import StackHandle
from tracebound import topics
from tracebound.client import AnswerReader, new_request, publish
from tracebound.events import Answer, Event, Verdict


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_stalled_run_is_answered_as_failed_and_a_late_verdict_adds_nothing(
    stack: StackHandle, tmp_path: Path
) -> None:
    port = _free_port()
    env = {
        "TRACEBOUND_SENTINEL_DEADLINE_S": "4",
        "TRACEBOUND_SENTINEL_TICK_S": "0.5",
        "TRACEBOUND_SENTINEL_METRICS_PORT": str(port),
    }
    request = new_request("payment-service 当前是否有 HighCPUUsage 告警？", language="zh")
    reader = AnswerReader(stack.kafka)
    verdicts = Collector(stack.kafka, topics.VERDICTS)
    seen: list[Answer] = []
    # The executor is not running: the plan is never executed, the run stalls.
    stalled = ("planner", "composer", "sentinel")
    with running_pipeline(stack, tmp_path / "a", env, roles=stalled):
        publish(stack.kafka, [request])
        seen += reader.wait_for({request.run_id}, timeout_s=120).values()
        # The sentinel reports like every service: alive, and the verdict it sent.
        assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).text == "ok\n"
        metrics = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
        sent = 'tracebound_events_produced_total{service="sentinel"} '
        [line] = [x for x in metrics.splitlines() if x.startswith(sent)]
        assert float(line.removeprefix(sent)) >= 1  # other stalled runs of the window count too
    assert len(seen) == 1
    failed = seen[0]
    assert (failed.verdict, failed.final_status) == ("REJECT", "failed")
    assert "92%" not in failed.user_facing_answer, "a failed run asserts nothing"
    # Now the missing stages come back: the run completes late, but it was answered.
    late = tuple(r for r in ROLES if r not in stalled)
    with running_pipeline(stack, tmp_path / "b", roles=(*late, "composer")):

        def real_verdict(events: list[Event]) -> bool:
            return any(
                isinstance(e, Verdict)
                and e.run_id == request.run_id
                and e.verifier_mode != "deadline"
                for e in events
            )

        assert verdicts.wait_until(real_verdict, timeout=120), "the late verdict never came"
        for answer in reader.answers(timeout_s=10):
            if answer.run_id == request.run_id:
                seen.append(answer)
    reader.close()
    verdicts.close()
    assert len(seen) == 1, "exactly one answer per request"


def test_a_sentinel_reading_its_look_back_gives_up_on_stalled_runs_and_no_answered_one(
    stack: StackHandle, tmp_path: Path
) -> None:
    """Runs older than the deadline: 6,000 answered (each answer published after all the
    requests) and 12 stalled. Starting on them, the sentinel must judge a partition
    only once it has read it to the end, so no answered run looks stalled meanwhile.
    The planner is not running (as the other roles): it is moved past the requests."""
    past = datetime.now(UTC) - timedelta(seconds=60)
    answered = [new_request(f"answered {i}") for i in range(6000)]
    stalled = [new_request(f"stalled {i}") for i in range(12)]
    asked = [r.model_copy(update={"occurred_at": past}) for r in (*answered, *stalled)]
    answers = [
        sample(Answer).model_copy(
            update={"run_id": r.run_id, "occurred_at": past + timedelta(seconds=1)}
        )
        for r in answered
    ]
    verdicts = TopicTail(stack.kafka, topics.VERDICTS)
    publish(stack.kafka, asked)
    publish(stack.kafka, answers)
    env = {"TRACEBOUND_SENTINEL_DEADLINE_S": "4", "TRACEBOUND_SENTINEL_TICK_S": "0.02"}
    wanted = {r.run_id for r in stalled}

    def given_up(events: list[Event]) -> set[str]:
        deadline = (e for e in events if isinstance(e, Verdict) and e.verifier_mode == "deadline")
        return {e.run_id for e in deadline}

    try:
        with running_pipeline(stack, tmp_path, env, roles=("sentinel",)):
            reached = verdicts.wait_until(lambda events: wanted <= given_up(events), timeout=120)
            verdicts.settle(2.0)  # a hundred more ticks
        assert reached, f"{len(wanted - given_up(verdicts.snapshot()))} stalled runs not given up"
        wrongly = given_up(verdicts.snapshot()) & {r.run_id for r in answered}
        assert not wrongly, f"{len(wrongly)} answered runs given up"
    finally:
        verdicts.close()
        pass_over(stack.kafka, "planner", [topics.REQUESTS])  # these runs are not to be run
