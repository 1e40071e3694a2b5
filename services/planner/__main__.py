"""``python -m services.planner``: the planner process (wiring only)."""

from __future__ import annotations

import sys
from functools import partial

from services.common.budget import single_call_budget
from services.common.failed_run import dead_letter_verdict
from services.common.inputs import role_inputs, role_outputs
from services.common.mode import model_for
from services.planner.handler import SERVICE, PlannerHandler
from services.planner.skills import load_skills
from tracebound.llm import readiness
from tracebound.llm.monitor import FallbackMonitor
from tracebound.runtime import ServiceSpec, run_service


def main() -> int:
    monitor = FallbackMonitor()
    input_topics, accepts = role_inputs(SERVICE)
    model = model_for(SERVICE)
    spec = ServiceSpec(
        name=SERVICE,
        input_topics=input_topics,
        on_poison=partial(dead_letter_verdict, SERVICE),
        output_topics=role_outputs(SERVICE),
        accepts=accepts,
        handler=PlannerHandler(load_skills(), model, monitor=monitor),
        model_budget=single_call_budget(model),
        collectors=(monitor, readiness.COLLECTOR),
    )
    return run_service(spec)


if __name__ == "__main__":
    sys.exit(main())
