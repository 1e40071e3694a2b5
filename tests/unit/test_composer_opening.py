"""An alert run's answer opens with its alerts: name, service, value, threshold, since when."""

from __future__ import annotations

import pytest

from services.composer import compose, guard_material
from services.composer.compose import ComposedAnswer
from services.composer.handler import ComposerHandler, with_demo_note
from services.composer.opening import opening_lines, with_opening
from services.gatekeeper import default_ruleset
from services.gatekeeper.handler import GatekeeperHandler
from services.verifier.handler import VerifierHandler, VerifierSettings
from tests.support import demo_evidence as demo
from tests.support.evidence_events import evidence_event
from tests.support.rulebook import BOOK
from tracebound.events import (
    Alert,
    AllowedClaim,
    Answer,
    ComposerInput,
    DiagnosisRequest,
    GatekeeperResult,
    Verdict,
)

DISK = Alert(
    status="firing",
    labels={"alertname": "HighDiskUsage", "service": "mysql", "threshold": "85"},
    annotations={"value": "91.5", "unit": "%", "summary": "disk filling"},
    startsAt="2026-05-04T10:00:00.123+02:00",
)
BARE = Alert(status="firing", labels={"alertname": "QueueBacklog", "instance": "10.0.0.7:9100"})
RESOLVED = Alert(status="resolved", labels={"alertname": "Gone", "service": "x"})


def request(*alerts: Alert, language: str = "en") -> DiagnosisRequest:
    return DiagnosisRequest(mode="AIOPS", query="q", alerts=alerts, language=language)


def test_alert_lines_state_only_what_the_alert_carries() -> None:
    assert opening_lines(request(DISK, BARE, RESOLVED).alerts, "en") == [
        "Alerts this answer is about:",
        "- HighDiskUsage on mysql: value 91.5%, threshold 85%, "
        "firing since 2026-05-04 08:00:00 UTC",
        "- QueueBacklog on 10.0.0.7:9100",
    ]


def test_chinese_alert_lines() -> None:
    lines = opening_lines((DISK,), "zh-CN")
    assert lines == [
        "本次回答针对的告警：",
        "- mysql 的 HighDiskUsage：当前值 91.5%，阈值 85%，自 2026-05-04 08:00:00 UTC 起触发",
    ]


@pytest.mark.parametrize("alerts", [(), (RESOLVED,)])
def test_runs_without_firing_alerts_keep_their_answer(alerts: tuple[Alert, ...]) -> None:
    answer = ComposedAnswer("s", (), "body")
    assert with_opening(answer, request(*alerts)) is answer


def verdict(req: DiagnosisRequest) -> Verdict:
    so = next(s for s in demo.scenarios() if s.name == "narrow-highcpu").structured_output
    event = evidence_event(so, demo.tool_invocations())
    [gate] = GatekeeperHandler(default_ruleset())(event)
    assert isinstance(gate, GatekeeperResult)
    [out] = VerifierHandler(VerifierSettings(max_rounds=1))(gate)
    assert isinstance(out, Verdict)
    return out.model_copy(update={"request": req})


def test_the_answer_opens_with_the_alerts_before_the_findings() -> None:
    [answer] = ComposerHandler()(verdict(request(DISK)))
    assert isinstance(answer, Answer) and answer.guard.ok
    lines = answer.user_facing_answer.splitlines()
    assert lines[0] == "Alerts this answer is about:"
    assert lines[1].startswith("- HighDiskUsage on mysql: value 91.5%")
    assert lines[2] == "" and lines[3] == "Verified findings:"


def test_two_pods_of_one_alert_are_told_apart() -> None:
    pods = [
        Alert(
            status="firing",
            labels={"alertname": "HighCPUUsage", "service": "checkout", "pod": pod},
            startsAt="2026-05-04T10:00:00Z",
        )
        for pod in ("checkout-a", "checkout-b")
    ]
    assert opening_lines(pods, "en")[1:] == [
        "- HighCPUUsage on checkout (checkout-a): firing since 2026-05-04 10:00:00 UTC",
        "- HighCPUUsage on checkout (checkout-b): firing since 2026-05-04 10:00:00 UTC",
    ]


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_published_answer_passes_the_guard_with_its_opening_lines(language: str) -> None:
    material = ComposerInput(
        original_query="q",
        verdict="PASS",
        allowed_claims=(
            AllowedClaim(
                claim_id="claim-neg",
                claim_type="negative_observation",
                claim_text="The current query found no disk errors for mysql.",
                raw_paths=("$.no_evidence",),
            ),
        ),
        rationale="r",
        evidence_backends=("demo",),
    )
    composed = with_opening(
        compose(material, language, book=BOOK), request(DISK, language=language)
    )
    published = with_demo_note(composed.user_facing_answer, material, language)
    quoted = opening_lines((DISK,), language)
    assert guard_material(material, published, quoted=quoted, rules=BOOK).ok
    assert not guard_material(
        material, published, rules=BOOK
    ).ok  # 91.5% and 85% come from the alert only


def test_alertmanager_nanosecond_start_times_are_read() -> None:
    alert = Alert(
        status="firing",
        labels={"alertname": "HighCPUUsage", "service": "checkout"},
        startsAt="2026-05-04T10:00:00.123456789Z",
    )
    assert opening_lines([alert], "en")[1] == (
        "- HighCPUUsage on checkout: firing since 2026-05-04 10:00:00 UTC"
    )
