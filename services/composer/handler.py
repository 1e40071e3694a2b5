"""The composer role: ``Verdict`` in, the run's one ``Answer`` out.

It states only the verifier's allowed material. Every answer passes the answer
guard; a violating one is replaced by the safe template answer and the
violations are recorded in the ``Answer`` event.
"""

from __future__ import annotations

from datetime import UTC, datetime

from services.composer.compose import compose
from services.composer.guard import enforce
from tracebound.events import Answer, Event, Verdict
from tracebound.events.records import EPOCH as EPOCH_START

SERVICE = "composer"
FINAL_STATUS = {"PASS": "answered", "LOW_CONFID": "degraded", "REJECT": "degraded"}


def latency_ms(requested_at: datetime, now: datetime | None = None) -> int:
    if requested_at <= EPOCH_START:
        return 0
    return max(int(((now or datetime.now(UTC)) - requested_at).total_seconds() * 1000), 0)


class ComposerHandler:
    def __call__(self, event: Event) -> list[Event]:
        assert isinstance(event, Verdict)
        language = event.request.language
        material = event.composer_input
        composed = compose(material, language)
        rejected = tuple(c.claim_text for c in event.claim_checks if c.status == "REFUTED")
        text, guard = enforce(
            material, language, composed.user_facing_answer, rejected_claims=rejected
        )
        answer = event.reply(
            Answer,
            SERVICE,
            answer_summary=composed.answer_summary,
            recommended_actions=composed.recommended_actions,
            user_facing_answer=text,
            verdict=event.verdict,
            language=language,
            guard=guard,
            latency_ms=latency_ms(event.request.requested_at),
            final_status=FINAL_STATUS[event.verdict],
            round=event.round,
            prompt_audit=event.prompt_audit,
        )
        return [answer]
