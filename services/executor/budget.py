"""The executor's model time per input: every model turn of a round, and its tools.

A round asks the model up to ``max_model_turns`` times, plus one repair turn when
that is on, and runs up to ``max_calls_per_round`` tools, each bounded by
``tool_timeout_s``; the runtime paces the executor by that sum (see
:mod:`services.common.budget`). A round runs the plan's calls in code, then usually
asks the model once. It still counts two calls per input, which doubles its default
concurrency (:mod:`tracebound.runtime.pacing`): each run's thread also waits on tools.
"""

from __future__ import annotations

from services.common.budget import model_budget
from services.executor.settings import ExecutorSettings
from tracebound.llm import LLMSettings
from tracebound.runtime.pacing import ModelBudget

EXECUTOR_SETTINGS = (
    "TRACEBOUND_EXECUTOR_MAX_MODEL_TURNS",
    "TRACEBOUND_EXECUTOR_MAX_CALLS_PER_ROUND",
    "TRACEBOUND_EXECUTOR_TOOL_TIMEOUT_S",
    "TRACEBOUND_EXECUTOR_REPAIR_TURN",
)
TYPICAL_TURNS = 2


def executor_budget(llm: LLMSettings, settings: ExecutorSettings) -> ModelBudget:
    tools_s = settings.max_calls_per_round * settings.tool_timeout_s
    turns = settings.max_model_turns + (1 if settings.repair_turn else 0)
    return model_budget(llm, turns, tools_s, EXECUTOR_SETTINGS, TYPICAL_TURNS)


__all__ = ["executor_budget"]
