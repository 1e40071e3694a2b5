"""Every token with a digit counts: paths, API versions, metric names, status codes, versions.

The claims are the issue's edited rows; the excerpts are true. None may PASS.
"""

from __future__ import annotations

from typing import Any

import pytest

from services.composer import guard
from services.verifier.facts import extract
from services.verifier.match import compare
from tests.support import demo_evidence as demo
from tests.support.http_log import HTTP_BINDING, HTTP_LOG
from tests.support.http_log import verdict as _verdict
from tests.support.rulebook import BOOK, RULES
from tracebound.events import AllowedClaim


@pytest.mark.parametrize(
    ("text", "binding"),
    [
        ("user-service returned HTTP 5200 on GET after 5200ms", HTTP_BINDING),
        ("user-service returned HTTP 500 on GET /api/v5/users/profile", HTTP_BINDING),
        ("SlowResponse is firing on user-service with p19=4.2s", demo.SLOW_ALERT),
        ("order-service 未出现 HikariPool-1 连接池耗尽错误", demo.POOL_LOG),
        ("order-service HikariPool-2 - Connection is not available", demo.POOL_LOG),
        ("user-service was deployed as v2.3.1 before HTTP 500", HTTP_BINDING),
        ("payment-service Redis host redis-payment-0:6380 timed out", demo.REDIS_TIMEOUT_LOG),
        # Chinese as it is written, without spaces around numbers and names
        ("user-service返回HTTP 500，耗时5300ms", HTTP_BINDING),
        ("user-service的请求耗时5200ms，返回HTTP 502", HTTP_BINDING),
        ("user-service返回HTTP 500，耗时５３００ｍｓ", HTTP_BINDING),  # full-width digits
    ],
)
def test_edited_rows_never_pass(text: str, binding: dict[str, Any]) -> None:
    verdict, status = _verdict(text, binding)
    assert verdict != "PASS"
    assert status in {"REFUTED", "NOT_ENOUGH_INFO"}


@pytest.mark.parametrize(
    ("text", "binding"),
    [
        ("user-service returned HTTP 500 on GET /api/v1/users/profile after 5.2s", HTTP_BINDING),
        ("SlowResponse is firing on user-service with p99=4.2s", demo.SLOW_ALERT),
        ("order-service HikariPool-1 reports that a connection is not available", demo.POOL_LOG),
        ("user-service返回HTTP 500，耗时5200ms", HTTP_BINDING),
    ],
)
def test_the_true_rows_still_pass(text: str, binding: dict[str, Any]) -> None:
    assert _verdict(text, binding) == ("PASS", "SUPPORTED")


@pytest.mark.parametrize(
    ("claim", "evidence", "kind"),
    [
        ("/api/v5/users/profile", HTTP_LOG, "path"),
        ("p19=4.2s", demo.ALERTS[2], "token"),
        ("HTTP 5200", HTTP_LOG, "code"),
        ("pod hash 7d8f9c6b4", "pod hash 7d8f9c6b5", "token"),
        ("version v2.3.2", "version v2.3.1", "version"),
        ("port 6380", "listening on port 6379", "code"),
        ("redis-payment-1 timed out", "redis-payment-0 timed out", "token"),
        ("payment-service-7d8f9c6b5-x2k4n", "payment-service-7d8f9c6b5-x2k4m", "pod"),
    ],
)
def test_a_changed_digit_is_another_value(claim: str, evidence: str, kind: str) -> None:
    [result] = [
        r
        for r in compare(extract(claim, rules=RULES), extract(evidence, rules=RULES), rules=RULES)
        if r.kind == kind
    ]
    assert (result.found, result.conflict) == (False, True)


def test_the_guard_flags_a_version_no_allowed_claim_states() -> None:
    allowed = AllowedClaim(
        claim_id="claim-1",
        claim_type="observation",
        claim_text="payment-service has a firing HighCPUUsage alert at 92% CPU.",
        evidence_excerpts=(demo.CPU_ALERT["evidence_excerpt"],),
        raw_paths=("$.alerts[0]",),
    )
    answer = "payment-service has a firing HighCPUUsage alert, CPU at 92%, after the v2.3.1 deploy."
    result = guard([allowed], answer, rules=BOOK)
    assert not result.ok
    assert any("v2.3.1" in v for v in result.violations)
