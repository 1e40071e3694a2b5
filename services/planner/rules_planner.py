"""The deterministic planner: skill routing and the scope rules, no model.

It is the offline default, the fallback when the model endpoint fails, and the
baseline an evaluation compares a model against. It never outputs a
``scope_contract`` (the planner's boundary, docs/contracts.md).
"""

from __future__ import annotations

from collections.abc import Sequence

from services.planner.planning import describe, execution_plan
from services.planner.routing import select
from services.planner.scope import read_focus
from services.planner.skills import Skill
from tracebound.events import DiagnosisRequest, PlannerPlan, PlanSnapshot


def plan_rules(
    request: DiagnosisRequest, skills: Sequence[Skill]
) -> tuple[PlanSnapshot, Skill | None]:
    focus = read_focus(request)
    selection = select(skills, request, focus.alert_names)
    skill = selection.skill
    execution = execution_plan(focus, skill, request, focus.narrow)
    reason = selection.reason + ("" if skill else "; using the default evidence steps")
    scope = (
        "narrow scope: only confirm what was asked, observations only, no widening"
        if focus.narrow
        else "full diagnosis of the request"
    )
    entities = ", ".join((*focus.services, *focus.alert_names)) or "none named"
    plan = PlannerPlan(
        selected_skill=skill.name if skill else None,
        selection_reason=reason,
        plan=tuple(describe(call) for call in execution.calls),
        reasoning=f"{scope}; entities: {entities}; mode {request.mode}",
    )
    snapshot = PlanSnapshot(
        planner_plan=plan,
        narrow_scope=focus.narrow,
        skill_version=skill.version if skill else None,
        planner_mode="rules",
        execution=execution,
    )
    return snapshot, skill
