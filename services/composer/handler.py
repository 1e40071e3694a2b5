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

from datetime import UTC, datetime

from services.composer.llm_composer import (
    LlmComposition,
    compose_llm,
    compose_rules,
    composer_prompt,
)
from services.composer.opening import with_opening
from services.composer.templates import phrases
from services.verifier.handler import merged_audit
from tracebound.events import Answer, ComposerInput, Event, Verdict
from tracebound.events.records import EPOCH as EPOCH_START
from tracebound.llm import ChatModel, StepRecorder

SERVICE = "composer"
FINAL_STATUS = {"PASS": "answered", "LOW_CONFID": "degraded", "REJECT": "degraded"}
# A deadline verdict (from the sentinel) means the run could not be completed.


DEMO_BACKEND = "demo"


def with_demo_note(text: str, material: ComposerInput, language: str) -> str:
    """``text`` plus the demo note when any tool of the round answered from the demo."""
    if DEMO_BACKEND not in material.evidence_backends:
        return text
    return f"{text}\n\n{phrases(language).demo_note}"


def latency_ms(requested_at: datetime, now: datetime | None = None) -> int:
    if requested_at <= EPOCH_START:
        return 0
    return max(int(((now or datetime.now(UTC)) - requested_at).total_seconds() * 1000), 0)


class ComposerHandler:
    def __init__(self, model: ChatModel | None = None) -> None:
        self.model = model

    def _compose(self, event: Verdict) -> LlmComposition:
        language = event.request.language
        rejected = tuple(c.claim_text for c in event.claim_checks if c.status == "REFUTED")
        if self.model is None:
            return compose_rules(event.composer_input, language, rejected)
        recorder = StepRecorder.for_event(self.model, composer_prompt(), event, SERVICE)
        return compose_llm(event.composer_input, language, recorder, rejected_claims=rejected)

    def __call__(self, event: Event) -> list[Event]:
        assert isinstance(event, Verdict)
        result = self._compose(event)
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
            latency_ms=latency_ms(event.request.requested_at),
            final_status="failed"
            if event.verifier_mode == "deadline"
            else FINAL_STATUS[event.verdict],
            round=event.round,
            prompt_audit=merged_audit(event.prompt_audit, result.prompts),
        )
        return [answer, *result.steps]
