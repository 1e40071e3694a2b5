"""The planner's own wiring for the role kit (:mod:`services.common.kit`)."""

from __future__ import annotations

from functools import partial

from services.common.failed_run import dead_letter_verdict
from services.common.kit import RoleContext, Wiring
from services.planner.handler import SERVICE, PlannerHandler
from services.planner.skills import load_skills
from tracebound.events import DiagnosisRequested


def build(kit: RoleContext) -> Wiring[DiagnosisRequested]:
    return Wiring(
        PlannerHandler(load_skills(), kit.model, monitor=kit.monitor),
        (DiagnosisRequested,),
        on_poison=partial(dead_letter_verdict, SERVICE),
    )
