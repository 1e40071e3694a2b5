"""The model time one input may cost a role in ``llm`` mode, from the settings that make it.

The runtime sizes a role's batches and its poll interval by this budget
(:mod:`tracebound.runtime.pacing`), and the sentinel checks that its deadline
leaves a stage the time its batches may take (:mod:`services.sentinel.deadline`).
Both compute it here (the executor adds its turns and tools in
:mod:`services.executor.budget`), so they cannot disagree.

One model call costs at most every attempt's deadline plus the client's waits
between attempts; a slow server's deadline may grow up to ``timeout_ceiling_s``
(:mod:`tracebound.llm.deadline`), so that is what an attempt may cost. The
budget is a worst case: a healthy endpoint answers in a fraction of it.
"""

from __future__ import annotations

from tracebound.llm import ChatModel, LLMSettings
from tracebound.runtime.pacing import ModelBudget

# The openai client's longest wait between two attempts of one call.
RETRY_WAIT_MAX_S = 8.0
LLM_SETTINGS = (
    "TRACEBOUND_LLM_TIMEOUT_S",
    "TRACEBOUND_LLM_TIMEOUT_CEILING_S",
    "TRACEBOUND_LLM_MAX_RETRIES",
)


def call_budget_s(llm: LLMSettings) -> float:
    """The longest one model call may take, retries included."""
    attempt_s = max(llm.timeout_s, llm.timeout_ceiling_s)
    return attempt_s * (llm.max_retries + 1) + RETRY_WAIT_MAX_S * llm.max_retries


def model_budget(
    llm: LLMSettings,
    calls: int = 1,
    extra_s: float = 0.0,
    settings: tuple[str, ...] = (),
    typical_calls: int = 1,
) -> ModelBudget:
    """At most ``calls`` model calls per input (usually ``typical_calls``), plus
    ``extra_s`` of other waiting (tools)."""
    seconds = calls * call_budget_s(llm) + extra_s
    return ModelBudget(seconds, LLM_SETTINGS + settings, min(typical_calls, calls))


def single_call_budget(model: ChatModel | None) -> ModelBudget | None:
    """The budget of a role that asks its model once per input; None without a model."""
    return None if model is None else model_budget(LLMSettings())


__all__ = ["call_budget_s", "model_budget", "single_call_budget"]
