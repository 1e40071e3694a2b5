"""Strict excerpt support: what the matcher accepts as verbatim and what it refuses."""

from __future__ import annotations

import pytest

from services.gatekeeper import default_ruleset
from tests.support import demo_evidence as demo

# -- strict excerpt support ------------------------------------------------------------------

REF = demo.LOGS[0]


@pytest.mark.parametrize(
    "excerpt",
    [
        "HikariPool-1 - Connection is not available",
        "hikaripool-1   -\tconnection IS NOT\navailable",
        "ＨｉｋａｒｉＰｏｏｌ－１ - Connection is not available",
        '"request timed out after 30000ms".',
        "\u201crequest timed out after 30000ms\u201d",
        "order-service HikariPool-1 ... request timed out after 30000ms",
        "order-service \u2026 active=50/50, idle=0, waiting=23",
        "...waiting=23",
        "HikariPool-1 \u2013 Connection is not available",
    ],
)
def test_benign_excerpt_variants_are_supported(excerpt: str) -> None:
    m = default_ruleset().matcher
    assert m.is_supported(excerpt, REF)


@pytest.mark.parametrize(
    "excerpt",
    [
        "Connection is available",  # negation removed
        "HikariPool-1 - Connection is ... available",  # negation hidden in an ellipsis gap
        "available, request timed out",  # starts right after "not"
        "request timed out after 3000ms",  # digit dropped
        "request timed out after 30000s",  # unit swapped
        "request timed out after 300",  # number cut inside a token
        "payment-service HikariPool-1",  # entity swapped
        "2026-07-08 23:05:29 ERROR",  # timestamp shifted
        "waiting=23 ... active=50/50",  # parts out of order
        "ERR ... pool",  # a part below min_part_chars
        "",
        "...",
    ],
)
def test_changed_excerpts_are_not_supported(excerpt: str) -> None:
    m = default_ruleset().matcher
    assert not m.is_supported(excerpt, REF)


def test_decimal_numbers_are_not_truncated() -> None:
    m = default_ruleset().matcher
    ref = demo.ALERTS[2]
    assert m.is_supported("p99=4.2s", ref)
    assert not m.is_supported("p99=4", ref)
    assert not m.is_supported("2s, threshold=3s", ref)


def test_negation_only_matters_in_the_clause_of_a_kept_part() -> None:
    m = default_ruleset().matcher
    ref = "pool is not currently available, request timed out after 30000ms"
    assert not m.is_supported("currently available", ref)
    assert not m.is_supported("pool is ... currently available", ref)
    assert m.is_supported("request timed out", ref)
    assert m.is_supported("pool is not ... request timed out", ref)


def test_only_one_pair_of_quotes_is_stripped() -> None:
    m = default_ruleset().matcher
    ref = "pool stats active=50/50, idle=0, waiting=23"
    assert m.is_supported('"idle=0, waiting=23".', ref)
    assert m.is_supported("\u201cidle=0, waiting=23.\u201d", ref)
    assert not m.is_supported("\"'idle=0, waiting=23'\"", ref)
    assert m.is_supported("active=50/50, idle=0...", ref)


SEED_ALERT = (
    "HighCPUUsage, service=payment-service, state=firing, current=92%, threshold=80%, "
    "duration=25m, pod=pod-payment-service-7d8f9c6b5-x2k4m, active_at=2026-07-08T22:40:12Z"
)


@pytest.mark.parametrize(
    ("excerpt", "supported"),
    [
        # the contract's own example merges fields of one alert, leaving one out
        ("HighCPUUsage, service=payment-service, state=firing, current=92%, duration=25m", True),
        ("HighCPUUsage; current=92%; active_at=2026-07-08T22:40:12Z", True),
        ("payment-service, state=firing, current=92%, duration=25", False),  # value cut
        ("HighCPUUsage, current=93%, duration=25m", False),  # changed value
        ("HighCPUUsage, duration=25m, current=92%", False),  # reordered
        ("HighCPUUsage, cur=92%, duration=25m", False),  # partial middle field
        ("HighCPUUsage, current=92%, threshold=90%", False),  # changed last field
    ],
)
def test_merged_fields_must_be_whole_and_in_order(excerpt: str, supported: bool) -> None:
    assert default_ruleset().matcher.is_supported(excerpt, SEED_ALERT) is supported


def test_cjk_negation_cannot_be_cut_off() -> None:
    m = default_ruleset().matcher
    ref = "query_logs: 当前查询未检索到匹配的日志; total=0"
    assert m.is_supported("当前查询未检索到匹配的日志", ref)
    assert m.is_supported("ＴＯＴＡＬ＝０", ref)
    assert not m.is_supported("检索到匹配的日志", ref)
