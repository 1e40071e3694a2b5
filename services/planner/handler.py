"""The planner role: ``DiagnosisRequested`` in, ``PlanProduced`` (+ ``AgentStep``s) out."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from services.planner.llm_planner import PlanRejected, plan_llm, planner_prompt
from services.planner.rules_planner import plan_rules
from services.planner.skills import Skill
from tracebound.events import DiagnosisRequested, Event, PlanProduced
from tracebound.llm import ChatModel, ModelCallFailed, StepRecorder
from tracebound.prompts import prompt_audit

SERVICE = "planner"
log = logging.getLogger("tracebound.planner")


class PlannerHandler:
    def __init__(self, skills: Sequence[Skill], model: ChatModel | None = None) -> None:
        self.skills = tuple(skills)
        self.model = model

    def __call__(self, event: Event) -> list[Event]:
        assert isinstance(event, DiagnosisRequested)
        request = event.request
        steps: list[Event] = []
        if self.model is not None:
            prompt = planner_prompt(request)
            recorder = StepRecorder.for_event(self.model, prompt, event, SERVICE)
            try:
                snapshot, skill = plan_llm(request, self.skills, recorder)
                audit = prompt_audit([prompt], [skill] if skill else [])
                steps = list(recorder.steps)
            except (ModelCallFailed, PlanRejected) as exc:
                log.warning(
                    "model planner failed, using rules: %s", exc, extra={"run_id": event.run_id}
                )
                snapshot, skill = plan_rules(request, self.skills)
                snapshot = snapshot.model_copy(update={"planner_mode": "rules-fallback"})
                audit = prompt_audit([], [skill] if skill else [])
                steps = list(recorder.steps)
        else:
            snapshot, skill = plan_rules(request, self.skills)
            audit = prompt_audit([], [skill] if skill else [])
        plan = event.reply(
            PlanProduced, SERVICE, plan=snapshot, request=request, prompt_audit=audit
        )
        return [plan, *steps]
