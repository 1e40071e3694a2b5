"""The sentinel's deadline, checked against how long a stage may hold a run in ``llm`` mode.

A stage commits a run's output only when the run's whole batch is done. A run that
reaches a stage just after a batch started waits for that batch, then for its own:
two batches of the slowest role (:attr:`~tracebound.runtime.pacing.Pacing.batch_budget_s`,
from the roles' model time budget). A deadline shorter than that would answer runs
as failed while a role is still working on them, so the sentinel refuses to start
with such a ``TRACEBOUND_SENTINEL_DEADLINE_S``, naming the settings that disagree;
left unset, the deadline is the default or that bound, whichever is longer.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from services.common.budget import model_budget
from services.common.mode import RoleSettings
from services.executor.budget import executor_budget
from services.executor.settings import ExecutorSettings
from tracebound.errors import ConfigError
from tracebound.llm import LLMSettings
from tracebound.runtime.pacing import ModelBudget, Pacing, pace
from tracebound.settings import RuntimeSettings, prefix_for
from tracebound.topology import MODEL_ROLES

DEFAULT_DEADLINE_S = 300.0
BATCHES_HELD = 2
DEADLINE_SETTING = "TRACEBOUND_SENTINEL_DEADLINE_S"


def configured_budgets() -> dict[str, ModelBudget]:
    """The budgets of the roles this environment runs in ``llm`` mode with an endpoint."""
    llm = LLMSettings()
    if not llm.configured:
        return {}
    return {
        role: executor_budget(llm, ExecutorSettings()) if role == "executor" else model_budget(llm)
        for role in MODEL_ROLES
        if RoleSettings.for_role(role).mode == "llm"
    }


def stage_paces(budgets: Mapping[str, ModelBudget]) -> dict[str, Pacing]:
    """The pacing of each role with a model, as its own process will derive it."""
    return {
        role: pace(role, RuntimeSettings.for_service(role), budget)
        for role, budget in budgets.items()
    }


def needed_s(paces: Mapping[str, Pacing]) -> tuple[float, str | None]:
    """The longest a stage may hold a run without failing, and the role that sets it."""
    worst, slowest = 0.0, None
    for role, pacing in paces.items():
        held = BATCHES_HELD * pacing.batch_budget_s
        if held > worst:
            worst, slowest = held, role
    return math.ceil(worst), slowest


def deadline_s(configured: float | None, paces: Mapping[str, Pacing] | None = None) -> float:
    """The deadline to run with; :class:`ConfigError` when the configured one is too short."""
    if paces is None:
        paces = stage_paces(configured_budgets())
    needed, role = needed_s(paces)
    if configured is None:
        return max(DEFAULT_DEADLINE_S, needed)
    if role is not None and configured < needed:
        pacing = paces[role]
        assert pacing.budget is not None
        prefix = prefix_for(role)
        raise ConfigError(
            f"sentinel: {DEADLINE_SETTING}={configured:g} is shorter than {role} may hold a"
            f" run in llm mode ({needed:g}s: {BATCHES_HELD} batches of {pacing.batch_size}"
            f" inputs, {pacing.concurrency} at a time, {pacing.budget.seconds:g}s each from"
            f" {', '.join(pacing.budget.settings)}, {prefix}BATCH_SIZE and"
            f" {prefix}CONCURRENCY); raise the deadline or lower the model time"
        )
    return configured


__all__ = ["DEFAULT_DEADLINE_S", "configured_budgets", "deadline_s", "needed_s", "stage_paces"]
