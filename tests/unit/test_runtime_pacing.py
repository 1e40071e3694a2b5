"""Concurrency, batch size, poll interval and the sentinel deadline follow the model budget."""

from __future__ import annotations

import pytest

from services.common.budget import call_budget_s, model_budget
from services.executor.budget import executor_budget
from services.executor.settings import ExecutorSettings
from services.sentinel.deadline import DEFAULT_DEADLINE_S, configured_budgets, deadline_s
from tracebound.errors import ConfigError
from tracebound.events import DiagnosisRequested
from tracebound.llm import LLMSettings
from tracebound.runtime import ServiceSpec, run_service
from tracebound.runtime.pacing import LIBRDKAFKA_MAX_POLL_MS, ModelBudget, pace
from tracebound.settings import KafkaSettings, RuntimeSettings, prefix_for

BUDGET = ModelBudget(10.0, ("TRACEBOUND_LLM_TIMEOUT_S",))


def test_a_role_without_a_model_keeps_one_call_at_a_time_and_its_batch_size() -> None:
    pacing = pace("planner", RuntimeSettings(), None)
    assert (pacing.concurrency, pacing.batch_size) == (1, 500)
    assert pacing.max_poll_interval_ms == LIBRDKAFKA_MAX_POLL_MS
    assert pacing.batch_budget_s == 0.0


def test_a_role_with_a_model_runs_calls_at_once_in_batches_sized_by_the_workers() -> None:
    pacing = pace("planner", RuntimeSettings(), BUDGET)
    assert pacing.concurrency == 32
    assert pacing.batch_size == 64 and pacing.waves == 2
    assert pacing.batch_budget_s == 20.0
    assert pacing.max_poll_interval_ms == LIBRDKAFKA_MAX_POLL_MS
    small = pace("planner", RuntimeSettings(concurrency=4, batch_size=3), BUDGET)
    assert (small.concurrency, small.batch_size, small.waves) == (4, 3, 1)


def test_a_role_that_usually_asks_its_model_twice_keeps_twice_the_runs_in_flight() -> None:
    llm = LLMSettings(base_url="http://127.0.0.1:1/v1")
    executor = pace("executor", RuntimeSettings(), executor_budget(llm, ExecutorSettings()))
    assert (executor.concurrency, executor.batch_size, executor.waves) == (64, 128, 2)
    assert pace("verifier", RuntimeSettings(), model_budget(llm)).concurrency == 32
    chosen = pace(
        "executor", RuntimeSettings(concurrency=8), executor_budget(llm, ExecutorSettings())
    )
    assert (chosen.concurrency, chosen.batch_size) == (8, 16)
    # never more runs than the model calls an input may make at most
    assert model_budget(llm, calls=1, typical_calls=2).typical_calls == 1


def test_the_poll_interval_grows_with_a_long_model_budget() -> None:
    pacing = pace("executor", RuntimeSettings(), ModelBudget(400.0, ()))
    assert pacing.max_poll_interval_ms == (2 * 400 + 60) * 1000
    assert pacing.consumer_config() == {"max.poll.interval.ms": str(860_000)}


def test_a_poll_interval_shorter_than_a_batch_is_refused_naming_the_settings() -> None:
    runtime = RuntimeSettings(max_poll_interval_ms=60_000, concurrency=2)
    with pytest.raises(ConfigError) as failed:
        pace("verifier", runtime, BUDGET)
    message = str(failed.value)
    for name in (
        "TRACEBOUND_VERIFIER_MAX_POLL_INTERVAL_MS=60000",
        "TRACEBOUND_VERIFIER_CONCURRENCY",
        "TRACEBOUND_VERIFIER_BATCH_SIZE",
        "TRACEBOUND_LLM_TIMEOUT_S",
    ):
        assert name in message
    with pytest.raises(ConfigError, match=r"max\.poll\.interval\.ms \(TRACEBOUND_KAFKA_EXTRA\)"):
        pace("verifier", RuntimeSettings(), BUDGET, {"max.poll.interval.ms": "30000"})
    # Without a model an explicit interval is the operator's business.
    assert pace("verifier", runtime, None).max_poll_interval_ms == 60_000


def test_the_model_budget_counts_attempts_waits_turns_and_tools() -> None:
    llm = LLMSettings(
        base_url="http://127.0.0.1:1/v1", timeout_s=2, timeout_ceiling_s=2, max_retries=1
    )
    assert call_budget_s(llm) == 2 * 2 + 8
    # A slow server's deadline may grow to the ceiling: each attempt may take that long.
    assert call_budget_s(llm.model_copy(update={"timeout_ceiling_s": 5})) == 2 * 5 + 8
    assert model_budget(llm).seconds == 12
    executor = executor_budget(llm, ExecutorSettings())
    assert executor.seconds == (6 + 1) * 12 + 6 * 10.0  # the turns, the repair turn, tools
    no_repair = executor_budget(llm, ExecutorSettings(repair_turn=False))
    assert no_repair.seconds == 6 * 12 + 6 * 10.0
    assert "TRACEBOUND_EXECUTOR_MAX_MODEL_TURNS" in executor.settings


def test_only_roles_in_llm_mode_with_an_endpoint_have_a_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("TRACEBOUND_LLM_BASE_URL", raising=False)
    monkeypatch.setenv("TRACEBOUND_COMPOSER_MODE", "llm")
    assert configured_budgets() == {}
    monkeypatch.setenv("TRACEBOUND_LLM_BASE_URL", "http://127.0.0.1:1/v1")
    assert set(configured_budgets()) == {"composer"}


def test_the_sentinel_deadline_covers_two_batches_of_the_slowest_stage() -> None:
    slow = {"executor": pace("executor", RuntimeSettings(), ModelBudget(200.0, ("X",)))}
    assert deadline_s(None, {}) == DEFAULT_DEADLINE_S
    assert deadline_s(None, slow) == 2 * 2 * 200.0
    assert deadline_s(900.0, slow) == 900.0
    with pytest.raises(ConfigError) as failed:
        deadline_s(300.0, slow)
    message = str(failed.value)
    assert "TRACEBOUND_SENTINEL_DEADLINE_S=300" in message and "executor" in message
    assert "TRACEBOUND_EXECUTOR_CONCURRENCY" in message
    assert deadline_s(4.0, {}) == 4.0  # rules mode: any deadline is consistent


def test_a_role_whose_settings_disagree_stops_before_it_joins_its_group(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A throwaway role: its settings prefix is derived from its name, not written out.
    monkeypatch.setenv(prefix_for("pacing-probe") + "MAX_POLL_INTERVAL_MS", "10000")
    spec = ServiceSpec(
        name="pacing-probe",
        input_topics=("tracebound.nowhere",),
        handler=lambda _event: [],
        accepts=(DiagnosisRequested,),
        model_budget=BUDGET,
    )
    assert run_service(spec, KafkaSettings(bootstrap_servers="127.0.0.1:1")) == 2
