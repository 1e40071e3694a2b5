"""Per-call deadlines from the measured speed: slow but alive is not dead."""

from __future__ import annotations

import json

from tests.support import fake_openai as fake
from tracebound.llm import LLMSettings, OpenAIChatModel
from tracebound.llm.deadline import SAFETY, Pace, Speed, measured_speed


def test_llama_cpp_timings_set_the_speed() -> None:
    timings = {"prompt_per_second": 300.0, "predicted_per_second": 80.0}
    assert measured_speed(timings, 1000, 50, 9000) == Speed(300.0, 80.0)


def test_without_timings_the_wall_time_is_charged_to_both_parts() -> None:
    assert measured_speed(None, 3000, 100, 10_000) == Speed(300.0, 10.0)
    assert measured_speed(None, None, 100, 10_000) is None


def test_the_deadline_fits_the_prompt_within_floor_and_ceiling() -> None:
    pace = Pace(timeout_s=30, ceiling_s=120)
    assert pace.deadline(6000, 512) == 30  # nothing measured yet: the configured timeout
    pace.observe(Speed(prompt=300.0, generation=80.0))
    assert pace.deadline(6000, 512) == 52.8  # 2 * (20 s to read + 6.4 s to write)
    assert pace.deadline(20_000, 512) == 120  # never above the ceiling
    assert pace.deadline(4500, 400) == SAFETY * (15 + 5)
    assert pace.deadline(100, 16) == 30  # never below the configured timeout


def test_a_timed_out_call_gives_the_next_unmeasured_one_twice_the_time() -> None:
    pace = Pace(timeout_s=30, ceiling_s=100)
    pace.timed_out(30)
    assert pace.deadline(1000, 100) == 60
    pace.timed_out(60)
    assert pace.deadline(1000, 100) == 100
    pace.observe(Speed(1000.0, 1000.0))
    assert pace.deadline(1000, 100) == 30


def test_the_reply_names_the_deadline_and_teaches_the_pace() -> None:
    # Token counts near the estimate: the calibration they teach is process-wide.
    entry = fake.text(json.dumps({"ok": True}), prompt_tokens=10, completion_tokens=5)
    with fake.FakeOpenAI(default=entry) as server:
        settings = LLMSettings(
            base_url=server.base_url,
            model="deadline-test",
            max_retries=0,
            timeout_s=5,
            timeout_ceiling_s=60,
        )
        model = OpenAIChatModel(settings)
        reply = model.complete([{"role": "user", "content": "hi"}])
        assert reply.deadline_s == 5
        assert model.pace.speed is not None
