"""One bad input costs one dead letter: outputs over the record limit, handlers that raise
on an input twice, and the failure outputs that answer the input's run at once."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from services.common.failed_run import DEAD_LETTER_MODE, dead_letter_verdict
from tests.unit.test_runtime_inflight import CODEC, DLQ, OUT, messages, step
from tracebound import topics
from tracebound.errors import HandlerCrashed, TransientError
from tracebound.events import (
    Alert,
    DeadLetter,
    DiagnosisRequest,
    DiagnosisRequested,
    Event,
    Verdict,
)
from tracebound.events import Producer as ProducerRef
from tracebound.runtime import ServiceSpec
from tracebound.runtime.batch import CrashedOnce, Limits, coordinates, transform
from tracebound.runtime.inflight import InFlight, call


def _spec(handler: object, on_poison: object = None) -> ServiceSpec:
    return ServiceSpec(
        "test",
        (topics.REQUESTS,),
        handler,  # type: ignore[arg-type]
        (DiagnosisRequested,),
        lambda e: (
            DLQ
            if isinstance(e, DeadLetter)
            else (topics.VERDICTS if isinstance(e, Verdict) else OUT)
        ),
        on_poison=on_poison,  # type: ignore[arg-type]
    )


def _echo(event: Event) -> Sequence[Event]:
    assert isinstance(event, DiagnosisRequested)
    return [step(event, event.request.query)]


def _letters(outputs: Sequence[object]) -> list[DeadLetter]:
    found = [CODEC.decode(o.value) for o in outputs if o.topic == DLQ]  # type: ignore[attr-defined]
    return [e for e in found if isinstance(e, DeadLetter)]


@pytest.fixture(params=[1, 3], ids=["inline", "in-flight"])
def inflight(request: pytest.FixtureRequest) -> InFlight:
    pool = InFlight(request.param)
    request.addfinalizer(pool.shutdown)
    return pool


def test_an_output_over_the_record_limit_dead_letters_its_input_alone(inflight: InFlight) -> None:
    batch = messages([("small", "r1"), ("x" * 5000, "r2"), ("also small", "r3")])
    outputs, dead = transform(
        _spec(_echo), CODEC, batch, inflight, Limits(max_record_bytes=4096 + 3000)
    )
    assert dead == ["OutputTooLarge"]
    assert [o.key for o in outputs if o.topic == OUT] == [b"r1", b"r3"]
    (letter,) = _letters(outputs)
    assert letter.run_id == "r2" and letter.source_offset == 1
    assert "exceeds the record limit" in letter.error_message


def test_a_handler_that_raises_is_read_again_once_then_dead_lettered(inflight: InFlight) -> None:
    def handler(event: Event) -> Sequence[Event]:
        assert isinstance(event, DiagnosisRequested)
        if event.request.query == "bad":
            raise OverflowError("date value out of range")
        return _echo(event)

    batch = messages([("good", "r1"), ("bad", "r2")])
    limits = Limits()
    with pytest.raises(CrashedOnce) as raised:
        transform(_spec(handler), CODEC, batch, inflight, limits)
    ((where, crash),) = raised.value.crashed
    assert where == coordinates(batch[1]) and isinstance(crash.__cause__, OverflowError)
    limits.suspects.add(where)  # what the loop does before it reads the batch again
    outputs, dead = transform(_spec(handler), CODEC, batch, inflight, limits)
    assert dead == ["HandlerCrashed"]
    (letter,) = _letters(outputs)
    assert letter.run_id == "r2" and "OverflowError: date value out of range" in (
        letter.error_message
    )
    assert [o.key for o in outputs if o.topic == OUT] == [b"r1"]


def test_a_transient_error_is_not_a_crash() -> None:
    def flaky(event: Event) -> Sequence[Event]:
        raise TransientError("database restarting")

    with pytest.raises(TransientError):
        call(flaky, messages_event())
    assert isinstance(call(lambda e: 1 / 0, messages_event()), HandlerCrashed)


def messages_event() -> DiagnosisRequested:
    return DiagnosisRequested(
        run_id="r",
        producer=ProducerRef(service="t"),
        request=DiagnosisRequest(mode="CHAT", query="q"),
    )


def test_the_dead_lettered_run_is_answered_as_failed_in_the_same_batch(
    inflight: InFlight,
) -> None:
    huge = "y" * 20_000
    alert = Alert(status="firing", labels={"alertname": "Big"}, annotations={"description": huge})
    request = DiagnosisRequested(
        run_id="r9",
        producer=ProducerRef(service="t"),
        request=DiagnosisRequest(mode="AIOPS", query="q", alerts=(alert,)),
    )
    batch = messages([("ok", "r1")])
    batch.append(type(batch[0])(CODEC.encode(request, topics.REQUESTS), b"r9", 1))
    limit = 4096 + 8000  # the echo of the alert run is too large; its slimmed verdict is not

    def handler(event: Event) -> Sequence[Event]:
        assert isinstance(event, DiagnosisRequested)
        return [step(event, event.request.query + str(event.request.alerts))]

    spec = _spec(handler, on_poison=lambda e, why: dead_letter_verdict("test", e, why))
    outputs, dead = transform(spec, CODEC, batch, inflight, Limits(max_record_bytes=limit))
    assert dead == ["OutputTooLarge"]
    (verdict,) = [CODEC.decode(o.value) for o in outputs if o.topic == topics.VERDICTS]
    assert isinstance(verdict, Verdict)
    assert (verdict.run_id, verdict.verdict, verdict.verifier_mode) == (
        "r9",
        "REJECT",
        DEAD_LETTER_MODE,
    )
    assert "OutputTooLarge" in verdict.rationale and verdict.claim_checks == ()
    description = verdict.request.alerts[0].annotations["description"]
    assert len(description) <= 1024 and description.endswith("more characters]")


def test_a_failure_output_that_cannot_be_made_costs_nothing_but_itself() -> None:
    def broken(event: Event, reason: str) -> Sequence[Event]:
        raise ValueError("no")

    batch = messages([("x" * 5000, "r2")])
    outputs, dead = transform(
        _spec(_echo, on_poison=broken), CODEC, batch, None, Limits(max_record_bytes=4096 + 3000)
    )
    assert dead == ["OutputTooLarge"] and len(_letters(outputs)) == 1 and len(outputs) == 1
