"""The planner role: ``DiagnosisRequested`` in, ``PlanProduced`` (+ ``AgentStep``s) out.

With a model the plan is model-written (``llm_planner``); without one, or when
the model fails, the rules planner writes it and the plan records why
(``planner_mode`` ``rules-fallback`` and its ``fallback``). At the ``small``
profile, a run whose alerts decided the skill gets the rules plan without a call.
"""

from __future__ import annotations

from collections.abc import Sequence

from services.planner.llm_planner import plan_llm, planner_prompt, skill_is_fixed
from services.planner.rules_planner import plan_rules
from services.planner.skills import Skill
from tracebound.events import DiagnosisRequest, DiagnosisRequested, Event, PlanProduced
from tracebound.llm import ChatModel
from tracebound.llm.budget import budget_for
from tracebound.llm.fallback import FALLBACK, LLM, decide, recorder_for, rules_only
from tracebound.llm.monitor import FallbackMonitor
from tracebound.prompts import PromptSet, prompt_audit

SERVICE = "planner"


class PlannerHandler:
    def __init__(
        self,
        skills: Sequence[Skill],
        model: ChatModel | None = None,
        *,
        prompts: PromptSet | None = None,
        monitor: FallbackMonitor | None = None,
    ) -> None:
        self.skills = tuple(skills)
        self.model = model
        self.prompts = prompts or PromptSet.active()
        self.monitor = monitor or FallbackMonitor()

    def __call__(self, event: DiagnosisRequested) -> list[Event]:
        request = event.request
        prompt = planner_prompt(request, self.prompts)
        decision = (
            rules_only(lambda: plan_rules(request, self.skills))
            if self._not_worth_asking(request)
            else decide(
                SERVICE,
                recorder_for(self.model, prompt, event, SERVICE),
                lambda rec: plan_llm(request, self.skills, prompt, rec),
                lambda: plan_rules(request, self.skills),
                self.monitor,
            )
        )
        snapshot, skill = decision.value
        if decision.mode == FALLBACK:
            snapshot = snapshot.model_copy(
                update={"planner_mode": FALLBACK, "fallback": decision.fallback}
            )
        audit = prompt_audit([prompt] if decision.mode == LLM else [], [skill] if skill else [])
        plan = event.reply(
            PlanProduced, SERVICE, plan=snapshot, request=request, prompt_audit=audit
        )
        return [plan, *decision.steps]

    def _not_worth_asking(self, request: DiagnosisRequest) -> bool:
        """A small model is not asked to reword the steps of a skill the alerts chose."""
        return (
            self.model is not None
            and budget_for(self.model).small
            and skill_is_fixed(request, self.skills)
        )
