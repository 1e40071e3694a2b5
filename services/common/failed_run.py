"""The verdict that ends a run a stage cannot carry on: given up, with the reason.

Two things give up on a run: the sentinel, when a run made no progress before its
deadline, and a role, when it dead-letters one of the run's inputs (an output too
large for Kafka, a handler that raised on it twice). Either way the composer gets
a REJECT verdict whose ``verifier_mode`` says why, answers the run as ``failed``
from its safe template, and nothing is asserted. The request it carries is
slimmed (:func:`~tracebound.bounds.slim_request`): whatever made the run fail may
be in it, and the verdict must still fit in one record.
"""

from __future__ import annotations

from collections.abc import Sequence

from tracebound.bounds import slim_request
from tracebound.events import ComposerInput, Event, PromptAudit, Verdict
from tracebound.events import Producer as ProducerRef
from tracebound.events.records import DiagnosisRequest

DEADLINE_MODE = "deadline"  # the verifier_mode of the sentinel's verdicts
DEAD_LETTER_MODE = "dead-letter"  # the verifier_mode of a role's verdict after a dead letter
FAILED_MODES = frozenset({DEADLINE_MODE, DEAD_LETTER_MODE})
MAX_RATIONALE_CHARS = 1000


def given_up_verdict(
    *,
    run_id: str,
    session_id: str | None,
    request: DiagnosisRequest,
    service: str,
    mode: str,
    rationale: str,
    round_no: int = 1,
    causation_id: str | None = None,
) -> Verdict:
    """A REJECT verdict that asserts nothing and tells the composer the run failed."""
    rationale = rationale[:MAX_RATIONALE_CHARS]
    request = slim_request(request)
    return Verdict(
        run_id=run_id,
        session_id=session_id,
        causation_id=causation_id,
        producer=ProducerRef(service=service),
        verdict="REJECT",
        groundedness_score=0.0,
        critical_fact_count=0,
        rationale=rationale,
        composer_input=ComposerInput(
            original_query=request.query, verdict="REJECT", rationale=rationale
        ),
        prompt_audit=PromptAudit(version="none"),
        round=round_no,
        verifier_mode=mode,
        request=request,
    )


def dead_letter_verdict(service: str, event: Event, reason: str) -> Sequence[Event]:
    """What ``service`` publishes for the run of an input it dead-lettered."""
    request = getattr(event, "request", None)
    if not isinstance(request, DiagnosisRequest):
        return []  # nothing to answer from: the sentinel's deadline gives the run up
    rationale = (
        f"dead letter: {service} could not process this run's "
        f"{type(event).__name__} ({reason}); nothing is asserted"
    )
    return [
        given_up_verdict(
            run_id=event.run_id,
            session_id=event.session_id,
            request=request,
            service=service,
            mode=DEAD_LETTER_MODE,
            rationale=rationale,
            round_no=int(getattr(event, "round", 1) or 1),
            causation_id=event.event_id,
        )
    ]
