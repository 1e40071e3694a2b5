"""The model planner: the planner prompt, one model call, a validated ``planner_plan``.

The narrow-scope flag stays deterministic (the scope rules), and a model that
names a skill outside the catalogue gets no skill: the executor must never run
steps nobody reviewed. The model is told the deterministic routing choice
(``$routing``); when the input alerts decided it (alertname, label, or the
generic investigation of an unknown alert) the model cannot overrule it, so
both planners keep one routing precedence. The model writes the plan's text;
the calls the plan records for the executor come from the chosen skill, as in
the rules planner. The prompt lists the catalogue as names and one-line
descriptions (only the routed skill when the alerts decided it), and the steps of
the routed skill only; the question goes in the user turn alone, never twice. An
alert storm that does not fit the context budget is shown with shorter
annotations, then only its first alerts (the routing above already saw them all).

At the ``small`` profile the model is not asked when the input alerts decided
the skill (:func:`skill_is_fixed`): it could only reword that skill's steps,
and a small model's plan text is more often noise than help to the executor.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from services.planner.planning import execution_plan
from services.planner.routing import Selection, deterministic_choice, select
from services.planner.scope import read_focus
from services.planner.skills import Skill, brief_catalogue, steps_text
from tracebound.events import DiagnosisRequest, PlannerPlan, PlanSnapshot
from tracebound.llm import StepRecorder, Trim, parse_model
from tracebound.llm.budget import clip_fields, staged_trims
from tracebound.llm.fallback import ReplyRejected
from tracebound.llm.question import shown_question
from tracebound.prompts import Prompt, PromptSet

# Prompt trimming (see _trims): what an over-budget prompt keeps of the input alerts.
ANNOTATION_CHARS, SHORT_ANNOTATION_CHARS, ALERTS_KEPT = 300, 80, 20
ALERT_TEXT_KEYS = frozenset({"annotations", "generatorURL"})
HIDDEN_ALERT_KEYS = frozenset({"generatorURL", "fingerprint"})
ZERO_TIME = "0001-01-01T00:00:00Z"  # Alertmanager's endsAt of a firing alert


class PlannerReply(BaseModel):
    """What the model must return; unknown fields (e.g. a scope_contract) are dropped."""

    model_config = ConfigDict(extra="ignore")

    selected_skill: str | None = None
    selection_reason: str = Field(min_length=1)
    plan: list[str] = Field(min_length=1, max_length=12)
    reasoning: str = ""


def skill_is_fixed(request: DiagnosisRequest, skills: Sequence[Skill]) -> bool:
    """Whether the input alerts decided the skill, so no model reply can change the calls."""
    routed = select(skills, request, read_focus(request).alert_names)
    return routed.binding and routed.skill is not None


def planner_prompt(request: DiagnosisRequest, prompts: PromptSet) -> Prompt:
    return prompts.get("aiops-planner" if request.mode == "AIOPS" else "chat-planner")


def plan_llm(
    request: DiagnosisRequest, skills: Sequence[Skill], prompt: Prompt, recorder: StepRecorder
) -> tuple[PlanSnapshot, Skill | None]:
    """Raises ``ModelCallFailed`` (endpoint trouble) or ``ReplyRejected`` (bad reply)."""
    focus = read_focus(request)
    routed = select(skills, request, focus.alert_names)
    small = recorder.budget.small
    values: dict[str, object] = {
        "language": request.language,
        "skills": brief_catalogue(_offered(skills, routed)),
        "routing": deterministic_choice(routed),
        "steps": "left out (small profile)" if small else steps_text(routed.skill),
    }
    alerts = [_shown_alert(a.model_dump()) for a in request.alerts]
    render = partial(_messages, prompt, values, request)
    reply, _step = recorder.complete(
        render(alerts),
        json_mode=True,
        schema=PlannerReply,
        trims=_trims(alerts, render, request.mode),
    )
    outcome, parsed = parse_model(reply.text, PlannerReply)
    if parsed is None:
        raise ReplyRejected(outcome.detail)
    skill, reason = _chosen(parsed, skills, routed)
    plan = PlannerPlan(
        selected_skill=skill.name if skill else None,
        selection_reason=reason,
        plan=tuple(parsed.plan),
        reasoning=parsed.reasoning,
    )
    snapshot = PlanSnapshot(
        planner_plan=plan,
        narrow_scope=focus.narrow,
        skill_version=skill.version if skill else None,
        planner_mode="llm",
        execution=execution_plan(focus, skill, request, focus.narrow),
    )
    return snapshot, skill


def _messages(
    prompt: Prompt,
    values: dict[str, object],
    request: DiagnosisRequest,
    alerts: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    if request.mode == "AIOPS":
        values = {**values, "alerts": json.dumps(alerts, ensure_ascii=False, separators=(",", ":"))}
    return [
        {"role": "system", "content": prompt.render(**values)},
        {"role": "user", "content": shown_question(request.query, request.alerts)},
    ]


def _offered(skills: Sequence[Skill], routed: Selection) -> Sequence[Skill]:
    """The catalogue the model picks from: only the routed skill when the alerts decided it.

    No reply can overrule that choice (:func:`_chosen`), so the other skills' lines
    would be read for nothing.
    """
    if routed.binding and routed.skill is not None:
        return [routed.skill]
    return skills


def _shown_alert(alert: dict[str, Any]) -> dict[str, Any]:
    """An alert as the planner sees it: no empty or zero fields, no link, no fingerprint."""
    return {
        key: value
        for key, value in alert.items()
        if value and key not in HIDDEN_ALERT_KEYS and value != ZERO_TIME
    }


def _alerts_kept(alerts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The first alerts, and a marker saying how many more the request holds."""
    if len(alerts) <= ALERTS_KEPT:
        return alerts
    return [*alerts[:ALERTS_KEPT], {"alerts_not_shown": len(alerts) - ALERTS_KEPT}]


def _trims(
    alerts: list[dict[str, Any]],
    render: Callable[[list[dict[str, Any]]], list[dict[str, Any]]],
    mode: str,
) -> Iterator[Trim]:
    """Smaller prompts, in order: shorter annotations, then fewer alerts (AIOPS only)."""
    if mode != "AIOPS":
        return iter(())
    stages: list[tuple[str, Callable[[list[dict[str, Any]]], list[dict[str, Any]]]]] = [
        (
            f"alert annotations cut to {ANNOTATION_CHARS} characters",
            partial(clip_fields, keys=ALERT_TEXT_KEYS, limit=ANNOTATION_CHARS),
        ),
        (f"alerts after the first {ALERTS_KEPT} left out", _alerts_kept),
        (
            f"alert annotations cut to {SHORT_ANNOTATION_CHARS} characters",
            partial(clip_fields, keys=ALERT_TEXT_KEYS, limit=SHORT_ANNOTATION_CHARS),
        ),
    ]
    return staged_trims(alerts, stages, render)


def _chosen(
    reply: PlannerReply, skills: Sequence[Skill], routed: Selection
) -> tuple[Skill | None, str]:
    """The skill the plan keeps and its reason: the model's, unless the alerts decided."""
    if routed.binding and (reply.selected_skill or None) != (
        routed.skill.name if routed.skill else None
    ):
        named = reply.selected_skill or "none"
        return routed.skill, f"{routed.reason} (the model chose {named}; alert routing kept)"
    by_name = {s.name: s for s in skills}
    skill = by_name.get(reply.selected_skill or "")
    reason = reply.selection_reason
    if reply.selected_skill and skill is None:
        reason += f" (model named unknown skill {reply.selected_skill!r}; none selected)"
    return skill, reason
