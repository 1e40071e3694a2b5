"""The model time one input may cost a role in ``llm`` mode, from the settings that make it.

The runtime sizes a role's batches and its poll interval by this budget
(:mod:`tracebound.runtime.pacing`), and the sentinel checks that its deadline
leaves a stage the time its batches may take (:mod:`services.sentinel.deadline`).
Both read it from here, so they cannot disagree.

One model call costs at most every attempt's timeout plus the client's waits
between attempts; the executor adds its model turns and the time its tools may
take. The budget is a worst case: a healthy endpoint answers in a fraction of it.
"""

from __future__ import annotations

from services.common.mode import RoleSettings
from services.executor.settings import ExecutorSettings
from tracebound.llm import ChatModel, LLMSettings
from tracebound.runtime.pacing import ModelBudget

# The openai client's longest wait between two attempts of one call.
RETRY_WAIT_MAX_S = 8.0
MODEL_ROLES = ("planner", "executor", "verifier", "composer")
LLM_SETTINGS = ("TRACEBOUND_LLM_TIMEOUT_S", "TRACEBOUND_LLM_MAX_RETRIES")
EXECUTOR_SETTINGS = (
    "TRACEBOUND_EXECUTOR_MAX_MODEL_TURNS",
    "TRACEBOUND_EXECUTOR_MAX_CALLS_PER_ROUND",
    "TRACEBOUND_EXECUTOR_TOOL_TIMEOUT_S",
)


def call_budget_s(llm: LLMSettings) -> float:
    """The longest one model call may take, retries included."""
    return llm.timeout_s * (llm.max_retries + 1) + RETRY_WAIT_MAX_S * llm.max_retries


def model_budget(role: str, llm: LLMSettings | None = None) -> ModelBudget:
    """The model time of one input of ``role`` when it runs in ``llm`` mode."""
    per_call = call_budget_s(llm or LLMSettings())
    if role != "executor":
        return ModelBudget(per_call, LLM_SETTINGS)
    executor = ExecutorSettings()
    tools_s = executor.max_calls_per_round * executor.tool_timeout_s
    return ModelBudget(
        executor.max_model_turns * per_call + tools_s, LLM_SETTINGS + EXECUTOR_SETTINGS
    )


def budget_for(role: str, model: ChatModel | None) -> ModelBudget | None:
    """The budget a role process runs with: None when it has no model (``rules``)."""
    return None if model is None else model_budget(role)


def configured_budgets() -> dict[str, ModelBudget]:
    """The budgets of the roles this environment runs in ``llm`` mode with an endpoint."""
    llm = LLMSettings()
    if not llm.configured:
        return {}
    return {
        role: model_budget(role, llm)
        for role in MODEL_ROLES
        if RoleSettings.for_role(role).mode == "llm"
    }


__all__ = ["budget_for", "call_budget_s", "configured_budgets", "model_budget"]
