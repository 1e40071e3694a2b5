"""``python -m services.executor``: the executor process (wiring only)."""

from __future__ import annotations

import sys

from services.common.inputs import role_inputs
from services.common.mode import model_for
from services.executor.handler import SERVICE, ExecutorHandler
from services.executor.settings import ExecutorSettings
from services.executor.tools import build_tools
from services.planner.skills import load_skills
from tracebound.llm.monitor import FallbackMonitor
from tracebound.runtime import ServiceSpec, run_service


def main() -> int:
    settings = ExecutorSettings()
    monitor = FallbackMonitor()
    handler = ExecutorHandler(
        build_tools(), load_skills(), settings, model_for(SERVICE, settings.mode), monitor=monitor
    )
    input_topics, accepts = role_inputs(SERVICE)
    spec = ServiceSpec(
        name=SERVICE,
        input_topics=input_topics,
        accepts=accepts,
        handler=handler,
        collectors=(monitor,),
    )
    return run_service(spec)


if __name__ == "__main__":
    sys.exit(main())
