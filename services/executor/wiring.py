"""The executor's own wiring for the role kit (:mod:`services.common.kit`).

Its model budget counts every model turn of a round and its tools
(:mod:`services.executor.budget`), and its tool threads are as many as the runs
the loop keeps in flight (see :class:`~services.executor.gate.ToolPool`).
"""

from __future__ import annotations

from functools import partial

from services.common.failed_run import dead_letter_verdict
from services.common.kit import RoleContext, Wiring
from services.executor.budget import executor_budget
from services.executor.gate import ToolPool
from services.executor.handler import SERVICE, ExecutorHandler
from services.executor.settings import ExecutorSettings
from services.executor.tools import build_tools
from services.gatekeeper.settings import configured_ruleset
from services.planner.skills import load_skills
from tracebound.events import PlanProduced, RetryRequested
from tracebound.llm import LLMSettings
from tracebound.runtime.pacing import in_flight
from tracebound.settings import RuntimeSettings


def build(kit: RoleContext) -> Wiring[PlanProduced | RetryRequested]:
    settings = ExecutorSettings()
    model = kit.model
    # the gatekeeper's own rules, so the repair turn checks what the gatekeeper will
    ruleset = configured_ruleset() if model is not None else None
    budget = executor_budget(LLMSettings(), settings) if model else None
    pool = ToolPool(in_flight(RuntimeSettings.for_service(SERVICE), budget))
    handler = ExecutorHandler(
        build_tools(), load_skills(), settings, model, ruleset, monitor=kit.monitor, tool_pool=pool
    )
    return Wiring[PlanProduced | RetryRequested](
        handler,
        (PlanProduced, RetryRequested),
        on_poison=partial(dead_letter_verdict, SERVICE),
        model_budget=budget,
    )
