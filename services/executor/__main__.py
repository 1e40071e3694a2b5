"""``python -m services.executor``: the executor process (wiring only)."""

from __future__ import annotations

import sys
from functools import partial

from services.common.failed_run import dead_letter_verdict
from services.common.inputs import role_inputs, role_outputs
from services.common.mode import model_for
from services.executor.budget import executor_budget
from services.executor.gate import ToolPool
from services.executor.handler import SERVICE, ExecutorHandler
from services.executor.settings import ExecutorSettings
from services.executor.tools import build_tools
from services.gatekeeper.settings import configured_ruleset
from services.planner.skills import load_skills
from tracebound.llm import LLMSettings, readiness
from tracebound.llm.monitor import FallbackMonitor
from tracebound.runtime import ServiceSpec, run_service
from tracebound.runtime.pacing import in_flight
from tracebound.settings import RuntimeSettings


def main() -> int:
    settings = ExecutorSettings()
    model = model_for(SERVICE, settings.mode)
    monitor = FallbackMonitor()
    # the gatekeeper's own rules, so the repair turn checks what the gatekeeper will
    ruleset = configured_ruleset() if model is not None else None
    budget = executor_budget(LLMSettings(), settings) if model else None
    # as many tool threads as the runs the loop keeps in flight (see ToolPool)
    pool = ToolPool(in_flight(RuntimeSettings.for_service(SERVICE), budget))
    handler = ExecutorHandler(
        build_tools(), load_skills(), settings, model, ruleset, monitor=monitor, tool_pool=pool
    )
    input_topics, accepts = role_inputs(SERVICE)
    spec = ServiceSpec(
        name=SERVICE,
        input_topics=input_topics,
        on_poison=partial(dead_letter_verdict, SERVICE),
        output_topics=role_outputs(SERVICE),
        accepts=accepts,
        handler=handler,
        model_budget=budget,
        collectors=(monitor, readiness.COLLECTOR),
    )
    return run_service(spec)


if __name__ == "__main__":
    sys.exit(main())
