"""The model planner: the planner prompt, one model call, a validated ``planner_plan``.

The narrow-scope flag stays deterministic (the scope rules), and a model that
names a skill outside the catalogue gets no skill: the executor must never run
steps nobody reviewed. The model writes the plan's text; the calls the plan
records for the executor come from the chosen skill, as in the rules planner.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from services.planner.planning import execution_plan
from services.planner.scope import read_focus
from services.planner.skills import Skill, catalogue_text
from tracebound.events import DiagnosisRequest, PlannerPlan, PlanSnapshot
from tracebound.llm import StepRecorder, parse_model
from tracebound.prompts import Prompt, load_prompt


class PlannerReply(BaseModel):
    """What the model must return; unknown fields (e.g. a scope_contract) are dropped."""

    model_config = ConfigDict(extra="ignore")

    selected_skill: str | None = None
    selection_reason: str = Field(min_length=1)
    plan: list[str] = Field(min_length=1, max_length=12)
    reasoning: str = ""


class PlanRejected(Exception):
    """The model's reply is not a usable plan; the caller falls back to rules."""


def planner_prompt(request: DiagnosisRequest) -> Prompt:
    return load_prompt("aiops-planner" if request.mode == "AIOPS" else "chat-planner")


def plan_llm(
    request: DiagnosisRequest, skills: Sequence[Skill], recorder: StepRecorder
) -> tuple[PlanSnapshot, Skill | None]:
    """Raises ``ModelCallFailed`` (endpoint trouble) or :class:`PlanRejected` (bad reply)."""
    prompt = planner_prompt(request)
    values: dict[str, object] = {
        "query": request.query,
        "language": request.language,
        "skills": catalogue_text(skills),
    }
    if request.mode == "AIOPS":
        values["alerts"] = json.dumps([a.model_dump() for a in request.alerts], ensure_ascii=False)
    messages = [
        {"role": "system", "content": prompt.render(**values)},
        {"role": "user", "content": request.query},
    ]
    reply, _step = recorder.complete(messages, json_mode=True)
    outcome, parsed = parse_model(reply.text, PlannerReply)
    if parsed is None:
        raise PlanRejected(outcome.detail)
    by_name = {s.name: s for s in skills}
    skill = by_name.get(parsed.selected_skill or "")
    reason = parsed.selection_reason
    if parsed.selected_skill and skill is None:
        reason += f" (model named unknown skill {parsed.selected_skill!r}; none selected)"
    plan = PlannerPlan(
        selected_skill=skill.name if skill else None,
        selection_reason=reason,
        plan=tuple(parsed.plan),
        reasoning=parsed.reasoning,
    )
    focus = read_focus(request)
    snapshot = PlanSnapshot(
        planner_plan=plan,
        narrow_scope=focus.narrow,
        skill_version=skill.version if skill else None,
        planner_mode="llm",
        execution=execution_plan(focus, skill, request, focus.narrow),
    )
    return snapshot, skill
