"""The verifier role: ``GatekeeperResult`` in; a ``Verdict`` or one more executor round out.

It reads nothing but the event: the gatekeeper-verified bindings and the
structured output travel inside it. A LOW_CONFID round with rounds left becomes
a ``RetryRequested`` (reasons, failed claims, missing info) for the executor;
otherwise the verdict stands and goes to the composer.

With a model the deterministic check still runs first and the model may only
make it stricter (``llm_verifier``); its ``AgentStep`` events are returned with
the role's output so they commit in the same transaction. Without one, or when
the model fails, the rules outcome is published (``verifier_mode`` says which).
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from services.verifier.input import input_from_event
from services.verifier.judge import LOW_CONFID, verify
from services.verifier.llm_verifier import RULES, LlmVerification, verifier_prompt, verify_llm
from tracebound.events import (
    Event,
    GatekeeperResult,
    PromptAudit,
    RetryContext,
    RetryRequested,
    Verdict,
)
from tracebound.llm import ChatModel, StepRecorder
from tracebound.prompts import Prompt
from tracebound.settings import TraceboundSettings

SERVICE = "verifier"


class VerifierSettings(TraceboundSettings):
    model_config = SettingsConfigDict(env_prefix="TRACEBOUND_VERIFIER_", frozen=True)

    max_rounds: int = Field(default=2, ge=1, le=5)


def merged_audit(audit: PromptAudit, prompts: Iterable[Prompt]) -> PromptAudit:
    """The incoming audit plus the prompts this role used, each named once."""
    refs = list(audit.prompts)
    refs += [p.ref() for p in prompts if p.ref() not in refs]
    return PromptAudit(version=audit.version, prompts=tuple(refs))


class VerifierHandler:
    def __init__(
        self, settings: VerifierSettings | None = None, model: ChatModel | None = None
    ) -> None:
        self.settings = settings or VerifierSettings()
        self.model = model

    def _judge(self, event: GatekeeperResult) -> LlmVerification:
        inp = input_from_event(event)
        if self.model is None:
            return LlmVerification(verify(inp), RULES)
        recorder = StepRecorder.for_event(self.model, verifier_prompt(), event, SERVICE)
        return verify_llm(inp, recorder, language=event.request.language)

    def __call__(self, event: Event) -> list[Event]:
        assert isinstance(event, GatekeeperResult)
        judged = self._judge(event)
        outcome = judged.outcome
        if outcome.verdict == LOW_CONFID and event.round < self.settings.max_rounds:
            context = RetryContext(
                round=event.round + 1,
                reasons=outcome.retry_reasons or (outcome.rationale,),
                failed_claims=outcome.failed_claims,
                missing_info=outcome.missing_info,
            )
            retry = event.reply(
                RetryRequested,
                SERVICE,
                retry_context=context,
                plan=event.plan,
                request=event.request,
            )
            return [retry, *judged.steps]
        verdict = event.reply(
            Verdict,
            SERVICE,
            verdict=outcome.verdict,
            groundedness_score=outcome.groundedness_score,
            critical_fact_count=outcome.critical_fact_count,
            claim_checks=outcome.claim_checks,
            facts_checked=outcome.facts_checked,
            rationale=outcome.rationale,
            composer_input=outcome.composer_input,
            prompt_audit=merged_audit(event.prompt_audit, judged.prompts),
            round=event.round,
            verifier_mode=judged.mode,
            request=event.request,
            aiops_rule_evaluation=outcome.aiops_rule_evaluation,
        )
        return [verdict, *judged.steps]
