"""The verifier role: ``GatekeeperResult`` in; a ``Verdict`` or one more executor round out.

It reads nothing but the event: the gatekeeper-verified bindings and the
structured output travel inside it. A LOW_CONFID round with rounds left becomes
a ``RetryRequested`` (reasons, failed claims, missing info) for the executor;
otherwise the verdict stands and goes to the composer.
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from services.verifier.input import input_from_event
from services.verifier.judge import LOW_CONFID, verify
from tracebound.events import (
    Event,
    GatekeeperResult,
    PromptAudit,
    RetryContext,
    RetryRequested,
    Verdict,
)

SERVICE = "verifier"


class VerifierSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="TRACEBOUND_VERIFIER_", extra="ignore")

    max_rounds: int = Field(default=2, ge=1, le=5)


class VerifierHandler:
    def __init__(self, settings: VerifierSettings | None = None) -> None:
        self.settings = settings or VerifierSettings()

    def __call__(self, event: Event) -> list[Event]:
        assert isinstance(event, GatekeeperResult)
        outcome = verify(input_from_event(event))
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
            return [retry]
        audit = PromptAudit(version=event.prompt_audit.version, prompts=event.prompt_audit.prompts)
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
            prompt_audit=audit,
            round=event.round,
            verifier_mode="rules",
            request=event.request,
            aiops_rule_evaluation=outcome.aiops_rule_evaluation,
        )
        return [verdict]
