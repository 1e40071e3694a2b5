"""``python -m services.executor``: the executor process (wiring only)."""

from __future__ import annotations

import sys

from services.common.budget import budget_for
from services.common.inputs import role_inputs
from services.common.mode import model_for
from services.executor.handler import SERVICE, ExecutorHandler
from services.executor.settings import ExecutorSettings
from services.executor.tools import build_tools
from services.planner.skills import load_skills
from tracebound.runtime import ServiceSpec, run_service


def main() -> int:
    settings = ExecutorSettings()
    model = model_for(SERVICE, settings.mode)
    handler = ExecutorHandler(build_tools(), load_skills(), settings, model)
    input_topics, accepts = role_inputs(SERVICE)
    spec = ServiceSpec(
        name=SERVICE,
        input_topics=input_topics,
        accepts=accepts,
        handler=handler,
        model_budget=budget_for(SERVICE, model),
    )
    return run_service(spec)


if __name__ == "__main__":
    sys.exit(main())
