"""The verifier role: ``GatekeeperResult`` in; a ``Verdict`` or one more executor round out.

It reads nothing but the event: the gatekeeper-verified bindings and the
structured output travel inside it. A LOW_CONFID round with rounds left becomes
a ``RetryRequested`` (reasons, failed claims, missing info) for the executor;
otherwise the verdict stands and goes to the composer.

With a model the deterministic check still runs first and the model may only
make it stricter (``llm_verifier``); its ``AgentStep`` events are returned with
the role's output so they commit in the same transaction. Without one, or when
the model fails, the rules outcome is published (``verifier_mode`` says which).
The verdict carries every fallback of its round so far — the plan's, the
executor's and its own — so the composer can state them on the answer.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from services.verifier.input import input_from_event
from services.verifier.judge import LOW_CONFID, VerifierOutcome
from services.verifier.llm_verifier import ROLE, verifier_prompt, verify_llm
from services.verifier.rules_file import (
    OverclaimPhrases,
    VerifierRules,
    default_overclaim_phrases,
    default_verifier_rules,
)
from tracebound.events import (
    Event,
    GatekeeperResult,
    PromptAudit,
    RetryContext,
    RetryRequested,
    Verdict,
)
from tracebound.llm import ChatModel
from tracebound.llm.fallback import LLM, Decision, gathered, recorder_for
from tracebound.llm.monitor import FallbackMonitor
from tracebound.prompts import Prompt, PromptSet
from tracebound.settings import TraceboundSettings

SERVICE = ROLE


class VerifierSettings(TraceboundSettings):
    model_config = SettingsConfigDict(env_prefix="TRACEBOUND_VERIFIER_", frozen=True)

    max_rounds: int = Field(default=2, ge=1, le=5)


def merged_audit(audit: PromptAudit, prompts: Iterable[Prompt]) -> PromptAudit:
    """The incoming audit plus the prompts this role used, each named once."""
    refs = list(audit.prompts)
    refs += [p.ref() for p in prompts if p.ref() not in refs]
    return PromptAudit(version=audit.version, prompts=tuple(refs))


class VerifierHandler:
    """Judges each round with the rules (and model, prompts) it is given.

    ``rules`` are the verifier rules to judge by; a replay passes candidate
    rules here, a service the repository's.
    """

    def __init__(
        self,
        settings: VerifierSettings | None = None,
        model: ChatModel | None = None,
        *,
        rules: VerifierRules | None = None,
        phrases: OverclaimPhrases | None = None,
        prompts: PromptSet | None = None,
        monitor: FallbackMonitor | None = None,
    ) -> None:
        self.settings = settings or VerifierSettings()
        self.model = model
        self.rules = rules or default_verifier_rules()
        self.phrases = phrases or default_overclaim_phrases()
        self.prompts = prompts or PromptSet.active()
        self.monitor = monitor or FallbackMonitor()
        self._prompt: Prompt | None = None

    def _verifier_prompt(self) -> Prompt:
        """The prompt for this handler's model, looked up on its first round."""
        if self._prompt is None:
            self._prompt = verifier_prompt(self.prompts, self.model)
        return self._prompt

    def _judge(self, event: GatekeeperResult, prompt: Prompt) -> Decision[VerifierOutcome]:
        return verify_llm(
            input_from_event(event),
            recorder_for(self.model, prompt, event, ROLE),
            language=event.request.language,
            prompt=prompt,
            rules=self.rules,
            phrases=self.phrases,
            monitor=self.monitor,
        )

    def __call__(self, event: GatekeeperResult) -> list[Event]:
        prompt = self._verifier_prompt()
        judged = self._judge(event, prompt)
        outcome = judged.value
        prompts = [prompt] if judged.mode == LLM else []
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
            prompt_audit=merged_audit(event.prompt_audit, prompts),
            round=event.round,
            verifier_mode=judged.mode,
            request=event.request,
            aiops_rule_evaluation=outcome.aiops_rule_evaluation,
            fallbacks=gathered(
                event.plan.fallback,
                event.executor_output_parse_status.fallback,
                judged.fallback,
            ),
        )
        return [verdict, *judged.steps]
