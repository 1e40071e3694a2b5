"""Fault injection on the real stack: every request still ends in exactly one answer.

Each scenario puts 500 requests in flight (the llm-endpoint "slow" scenario 100:
every model call there waits out the client timeout, and each role handles its
batch one message at a time, so 500 would take several minutes) over the four
demo questions, injects one kind of fault mid-stream, and then checks:

* exactly one ``Answer`` per request on ``tracebound.answers`` (read_committed,
  counted per run id after a settle period);
* the scenario's projection (a private schema, its own consumer groups) has one
  ``diagnosis_run`` row per request and no other of ours, unique tool
  invocations, and equals a ``projections rebuild`` from the topics;
* (poison) every poison record is in ``tracebound.dead-letters`` with its reason.

Each scenario prints ``scenario <name>: sent N, answered N, duplicates 0, lost 0``
and the module prints the table at the end (also without ``-s``).
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support import fake_openai
from tests.support.fault_models import PROJECTION, check_read_models
from tests.support.faults import (
    ROLES,
    AnswerCounter,
    FaultPipeline,
    Feeder,
    assert_one_answer_each,
    requests,
)
from tests.support.kafka_io import TopicTail
from tests.support.poison import inject_poison, missing_dead_letters
from tests.support.stack import StackHandle
from tracebound import topics
from tracebound.stack import postgres

IN_FLIGHT = 500
SLOW_IN_FLIGHT = 100
SETTLE_S = 5.0  # read on after the last answer: a duplicate would show up now
ANSWER_TIMEOUT_S = 240.0
PROJECTION_TIMEOUT_S = 180.0
SUMMARY: list[str] = []


@pytest.fixture(scope="module", autouse=True)
def summary_table(request: pytest.FixtureRequest) -> Iterator[None]:
    """Print every scenario's line once more at the end of the module, capture or not."""
    yield
    if not SUMMARY:
        return
    capture = request.config.pluginmanager.getplugin("capturemanager")
    guard = capture.global_and_fixture_disabled() if capture else contextlib.nullcontext()
    with guard:
        print("\nfault-injection summary")
        for line in SUMMARY:
            print(f"  {line}")


def _report(
    capsys: pytest.CaptureFixture[str],
    name: str,
    sent: int,
    counts: tuple[int, ...],
    timing: str,
) -> None:
    answered, duplicates, lost = counts
    line = (
        f"scenario {name}: sent {sent}, answered {answered}, duplicates {duplicates}, lost {lost}"
    )
    SUMMARY.append(line)
    with capsys.disabled():
        print(f"\n{line} ({timing})")


@contextlib.contextmanager
def _pipeline(
    stack: StackHandle, tmp_path: Path, env: dict[str, str] | None = None
) -> Iterator[FaultPipeline]:
    pipeline = FaultPipeline(stack, tmp_path / "state", env or {})
    try:
        yield pipeline
    finally:
        pipeline.stop()
        with contextlib.suppress(Exception):
            pipeline.drop_schema()


def _settle_and_check(
    name: str,
    pipeline: FaultPipeline,
    counter: AnswerCounter,
    capsys: pytest.CaptureFixture[str],
    answer_timeout_s: float = ANSWER_TIMEOUT_S,
    *,
    must_survive: bool = False,
) -> None:
    started = time.monotonic()
    try:
        counter.wait_all(answer_timeout_s, name)
        answered_s = time.monotonic() - started
        if must_survive:
            died = [r for r in (*ROLES, PROJECTION) if not pipeline.alive(r)]
            assert not died, f"{name}: died with the fault: {died}"
        time.sleep(SETTLE_S)
        counts = assert_one_answer_each(counter, name)
    except AssertionError as exc:
        logs = "\n".join(f"--- {r}\n{pipeline.log_tail(r, 8)}" for r in (*ROLES, PROJECTION))
        # The reason comes last too: a CI log is often read from its tail.
        raise AssertionError(f"{exc}\nservice logs:\n{logs}\n=== {exc}") from None
    phases = check_read_models(pipeline, counter.run_ids, PROJECTION_TIMEOUT_S)
    checked = ", ".join(f"{k} {v:.0f}s" for k, v in phases.items())
    timing = f"last answer after {answered_s:.0f}s; read models: {checked}"
    _report(capsys, name, len(counter.run_ids), counts, timing)


def _start(pipeline: FaultPipeline, capsys: pytest.CaptureFixture[str]) -> None:
    """Start the roles and the projection; the faults hit our stream, not the history."""
    started = time.monotonic()
    pipeline.start()
    pipeline.wait_projected(PROJECTION_TIMEOUT_S)
    with capsys.disabled():
        print(f"\nprojection ready in {time.monotonic() - started:.0f}s")


def _wait_for(counter: AnswerCounter, count: int, what: str, timeout_s: float = 120) -> int:
    done = counter.wait_answered(count, timeout_s)
    assert done >= count, f"{what}: only {done} answered before the fault"
    assert done < len(counter.run_ids), f"{what}: the stream ended before the fault"
    return done


@pytest.mark.timeout(420)
def test_sigkill_every_role_and_the_projection_mid_stream(
    stack: StackHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = random.Random(1701)
    asked = requests(IN_FLIGHT, seed=1)
    counter = AnswerCounter(stack.kafka, {e.run_id for e in asked})
    try:
        with _pipeline(stack, tmp_path) as pipeline:
            _start(pipeline, capsys)
            # The last requests wait until every role was killed once: however fast the
            # pipeline runs, no kill can fall after the end of the stream.
            held_back = len(asked) // 5
            feeder = Feeder(stack.kafka, asked[:-held_back], burst=25, pause_s=0.8)
            feeder.start()
            _wait_for(counter, 25, "sigkill")
            victims = [*ROLES, PROJECTION]
            rng.shuffle(victims)
            kills: list[tuple[str, int]] = []
            for role in victims:
                time.sleep(rng.uniform(0.2, 1.5))
                kills.append((role, counter.answered()))
                pipeline.kill(role)
                time.sleep(rng.uniform(0.0, 0.5))
                pipeline.start((role,))
            feeder.finish(120)
            rest = Feeder(stack.kafka, asked[-held_back:], burst=25, pause_s=0.8)
            rest.start()
            rest.finish(120)
            assert all(done < len(asked) for _, done in kills), f"a kill after the end: {kills}"
            with capsys.disabled():
                print(f"\nkills (role, answered so far): {kills}")
            _settle_and_check("sigkill", pipeline, counter, capsys)
    finally:
        counter.close()


def _restart_mid_stream(
    scenario: str,
    stack: StackHandle,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    *,
    seed: int,
    stop: Callable[[], object],
    start: Callable[[], object],
    down_s: float,
) -> None:
    """500 requests in flight; once 50 are answered, ``stop``, wait ``down_s``, ``start``."""
    asked = requests(IN_FLIGHT, seed=seed)
    counter = AnswerCounter(stack.kafka, {e.run_id for e in asked})
    try:
        with _pipeline(stack, tmp_path) as pipeline:
            _start(pipeline, capsys)
            feeder = Feeder(stack.kafka, asked, burst=25, pause_s=0.5)
            feeder.start()
            before = _wait_for(counter, 50, scenario)
            stop()
            try:
                time.sleep(down_s)
                during = counter.answered()
            finally:
                start()
            feeder.finish(240)
            with capsys.disabled():
                print(f"\nanswered when stopped: {before}, when restarted: {during}")
            _settle_and_check(scenario, pipeline, counter, capsys, must_survive=True)
    finally:
        counter.close()


@pytest.mark.timeout(420)
def test_broker_stopped_and_restarted_mid_stream(
    stack: StackHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if stack.kind != "local":
        pytest.skip("stopping the broker needs the local stack")
    _restart_mid_stream(
        "broker-restart",
        stack,
        tmp_path,
        capsys,
        seed=2,
        stop=stack.stop_broker,
        start=stack.start_broker,
        down_s=3,
    )


@pytest.mark.timeout(420)
def test_postgres_stopped_and_restarted_mid_stream(
    stack: StackHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = stack.stack_settings
    if stack.kind != "local" or settings is None:
        pytest.skip("stopping PostgreSQL needs the local stack")
    _restart_mid_stream(
        "postgres-restart",
        stack,
        tmp_path,
        capsys,
        seed=3,
        stop=lambda: postgres.stop_server(settings),
        start=lambda: postgres.start_server(settings),
        down_s=5,
    )


LLM_FAULTS = {
    # name: (requests, client timeout, default reply, scripted replies first)
    "llm-slow": (SLOW_IN_FLIGHT, "0.1", fake_openai.delay(0.6), ()),
    "llm-5xx": (IN_FLIGHT, "2", fake_openai.status(500), ()),
    "llm-malformed": (
        IN_FLIGHT,
        "2",
        fake_openai.garbage(b'{"choices": [{"message": ', json_type=True),
        tuple(
            fake_openai.text('{"selected_skill": "diagnose-high-cpu", "plan": [')
            for _ in range(400)
        ),
    ),
    "llm-gone": (IN_FLIGHT, "2", fake_openai.text("fake-openai: not a structured reply"), ()),
}


@pytest.mark.timeout(420)
@pytest.mark.parametrize("fault", list(LLM_FAULTS))
def test_model_endpoint_faults_in_llm_mode(
    stack: StackHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str], fault: str
) -> None:
    count, timeout_s, default, scripted = LLM_FAULTS[fault]
    asked = requests(count, seed=10 + list(LLM_FAULTS).index(fault))
    counter = AnswerCounter(stack.kafka, {e.run_id for e in asked})
    server = fake_openai.FakeOpenAI(default=default).start()
    server.script(scripted)
    env = {
        f"TRACEBOUND_{r.upper()}_MODE": "llm"
        for r in ("planner", "executor", "verifier", "composer")
    }
    env.update(
        TRACEBOUND_LLM_BASE_URL=server.base_url,
        TRACEBOUND_LLM_TIMEOUT_S=timeout_s,
        TRACEBOUND_LLM_MAX_RETRIES="0",
    )
    # llm-gone: the last fifth is sent only once the endpoint is gone, so those runs
    # surely meet it gone (the roles may otherwise finish the stream before the stop).
    after = asked[-(len(asked) // 5) :] if fault == "llm-gone" else []
    try:
        with _pipeline(stack, tmp_path, env) as pipeline:
            _start(pipeline, capsys)
            feeder = Feeder(stack.kafka, asked[: len(asked) - len(after)], burst=50, pause_s=0.2)
            feeder.start()
            if after:
                _wait_for(counter, 100, fault, timeout_s=180)
                server.stop()  # the endpoint disappears mid-stream
                feeder.finish(120)
                feeder = Feeder(stack.kafka, after, burst=50, pause_s=0.2)
                feeder.start()
            feeder.finish(120)
            _settle_and_check(fault, pipeline, counter, capsys, answer_timeout_s=360)
            assert server.requests, "the roles never called the model: not in llm mode"
            if after:
                _assert_rules_fallback_gathered(pipeline, {e.run_id for e in after})
    finally:
        server.stop()
        counter.close()


def _assert_rules_fallback_gathered(pipeline: FaultPipeline, run_ids: set[str]) -> None:
    """Runs asked after the endpoint vanished gathered evidence by the rules fallback."""
    with pipeline.conn() as conn:
        rows = conn.execute(
            "SELECT run_id FROM tool_invocation WHERE run_id = ANY(%s) GROUP BY run_id",
            (list(run_ids),),
        ).fetchall()
    without = run_ids - {r[0] for r in rows}
    assert not without, (
        f"llm-gone: {len(without)} of {len(run_ids)} runs asked after the endpoint vanished"
        " have no tool invocation: the executor did not fall back to its rules"
    )


@pytest.mark.timeout(420)
def test_poison_in_every_input_topic_is_dead_lettered_mid_stream(
    stack: StackHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    asked = requests(IN_FLIGHT, seed=4)
    counter = AnswerCounter(stack.kafka, {e.run_id for e in asked})
    letters = TopicTail(stack.kafka, topics.DEAD_LETTERS)
    try:
        with _pipeline(stack, tmp_path) as pipeline:
            _start(pipeline, capsys)
            # 500 over about 25 s: the stream outlasts the roles' first answers.
            feeder = Feeder(stack.kafka, asked, burst=10, pause_s=0.5)
            feeder.start()
            _wait_for(counter, 20, "poison")
            poison = inject_poison(stack.kafka, seed=5)
            feeder.finish(120)
            assert len(poison) == 18
            deadline = time.monotonic() + 120
            problems = missing_dead_letters(poison, letters.snapshot())
            while problems and time.monotonic() < deadline:
                time.sleep(0.5)
                problems = missing_dead_letters(poison, letters.snapshot())
            assert not problems, "\n".join(problems)
            _settle_and_check("poison", pipeline, counter, capsys)
            with pipeline.conn() as conn:
                row = conn.execute(
                    "SELECT count(*) FROM diagnosis_run WHERE run_id LIKE 'poison-%'"
                ).fetchone()
            assert row is not None and row[0] == 0, "a poison record was projected"
    finally:
        letters.close()
        counter.close()
