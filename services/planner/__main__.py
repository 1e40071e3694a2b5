"""``python -m services.planner``: the planner process (wiring only)."""

from __future__ import annotations

import sys

from services.common.mode import model_for
from services.planner.handler import SERVICE, PlannerHandler
from services.planner.skills import load_skills
from tracebound import topics
from tracebound.events import DiagnosisRequested
from tracebound.runtime import ServiceSpec, run_service


def main() -> int:
    spec = ServiceSpec(
        name=SERVICE,
        input_topics=(topics.REQUESTS,),
        handler=PlannerHandler(load_skills(), model_for(SERVICE)),
        accepts=(DiagnosisRequested,),
    )
    return run_service(spec)


if __name__ == "__main__":
    sys.exit(main())
