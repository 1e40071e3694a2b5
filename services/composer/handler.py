"""The composer role: ``Verdict`` in, the run's one ``Answer`` out.

It states only the verifier's allowed material, and an alert run's answer opens
with the alerts it is about (``opening``, quoted from the request). Every answer
passes the answer guard; a violating one is replaced by the safe template answer and the
violations are recorded in the ``Answer`` event. With a model the answer is
model-written (``llm_composer``) and guarded the same way; REJECT, endpoint
trouble and unparseable replies get the template answer. An answer whose
round ran any tool on the demo environment ends with the demo note, whoever
wrote it, so demo data is never mistaken for the monitored system. The model's
``AgentStep`` events are returned with the ``Answer`` so they commit in the
same transaction.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from services.common.failed_run import FAILED_MODES
from services.composer.llm_composer import ROLE, Composition, compose_llm, composer_prompt
from services.composer.opening import with_opening
from services.composer.rulebook import ComposerRules
from services.composer.templates import phrases
from services.verifier.handler import merged_audit
from services.verifier.rules_file import VerifierRules
from tracebound.events import Answer, ComposerInput, Event, GuardResult, PromptAudit, Verdict
from tracebound.events.records import EPOCH as EPOCH_START
from tracebound.llm import ChatModel
from tracebound.llm.fallback import LLM, Decision, gathered, recorder_for
from tracebound.llm.monitor import FallbackMonitor
from tracebound.prompts import PromptSet

SERVICE = ROLE
FINAL_STATUS = {"PASS": "answered", "LOW_CONFID": "degraded", "REJECT": "degraded"}


DEMO_BACKEND = "demo"


def with_demo_note(text: str, material: ComposerInput, language: str) -> str:
    """``text`` plus the demo note when any tool of the round answered from the demo."""
    if DEMO_BACKEND not in material.evidence_backends:
        return text
    return f"{text}\n\n{phrases(language).demo_note}"


def latency_ms(requested_at: datetime, now: datetime) -> int:
    if requested_at <= EPOCH_START:
        return 0
    return max(int((now - requested_at).total_seconds() * 1000), 0)


def utc_now() -> datetime:
    return datetime.now(UTC)


class ComposerHandler:
    """Writes each run's answer with the model, rules, prompts and clock it is given."""

    def __init__(
        self,
        model: ChatModel | None = None,
        *,
        rules: VerifierRules | None = None,
        prompts: PromptSet | None = None,
        monitor: FallbackMonitor | None = None,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.model = model
        self.rules = ComposerRules.shipped(rules)
        self.prompts = prompts or PromptSet.active()
        self.monitor = monitor or FallbackMonitor()
        self.clock = clock

    def _compose(self, event: Verdict) -> Decision[Composition]:
        prompt = composer_prompt(self.prompts)
        return compose_llm(
            event.composer_input,
            event.request.language,
            recorder_for(self.model, prompt, event, SERVICE),
            prompt=prompt,
            rules=self.rules,
            monitor=self.monitor,
            rejected_claims=tuple(
                c.claim_text for c in event.claim_checks if c.status == "REFUTED"
            ),
            alerts=event.request.alerts,
        )

    def __call__(self, event: Verdict) -> list[Event]:
        decision = self._compose(event)
        result = decision.value
        prompts = [composer_prompt(self.prompts)] if decision.mode == LLM else []
        composed = with_opening(result.answer, event.request)
        answer = event.reply(
            Answer,
            SERVICE,
            answer_summary=composed.answer_summary,
            recommended_actions=composed.recommended_actions,
            user_facing_answer=with_demo_note(
                composed.user_facing_answer, event.composer_input, event.request.language
            ),
            verdict=event.verdict,
            language=event.request.language,
            guard=result.guard,
            latency_ms=latency_ms(event.request.requested_at, self.clock()),
            final_status="failed"
            if event.verifier_mode in FAILED_MODES
            else FINAL_STATUS[event.verdict],
            round=event.round,
            prompt_audit=merged_audit(event.prompt_audit, prompts),
            fallbacks=gathered(decision.fallback, earlier=event.fallbacks),
        )
        return [answer, *decision.steps]


def failed_answer(event: Event, reason: str) -> list[Event]:
    """The answer of a run whose verdict the composer dead-letters (it raised on it
    twice): the safe REJECT template, ``final_status`` failed, nothing asserted.

    It reads nothing of the verdict but its run, round and language, so whatever in
    it made the composer fail cannot make this fail too; the reason is in the dead
    letter beside it.
    """
    del reason  # recorded in the dead letter, not said to the user
    language = "en"
    request = getattr(event, "request", None)
    if request is not None and request.language in ("zh", "en"):
        language = request.language
    p = phrases(language)
    return [
        event.reply(
            Answer,
            SERVICE,
            answer_summary=p.reject_summary,
            user_facing_answer=p.reject_intro,
            verdict="REJECT",
            language=language,
            guard=GuardResult(ok=True),
            latency_ms=0,
            final_status="failed",
            round=int(getattr(event, "round", 1) or 1),
            prompt_audit=PromptAudit(version="none"),
        )
    ]
