"""Facts bound to attributes: a claim's number must be the value of what it says it measures.

The edited claims are the issue's rows (a threshold taken for the current value,
a duration for a status code) judged through the gatekeeper and the verifier
against true demo excerpts; none may PASS. The benign variants (paraphrase,
reordered facts, full-width digits, units written differently) keep passing.
"""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest

from services.executor import claims as executor_claims
from services.executor.claim_templates import templates
from services.executor.tools import refs
from services.executor.tools.demo_env import alerts_at
from services.executor.tools.settings import ToolSettings
from services.verifier import verify
from services.verifier.facts import extract
from services.verifier.match import compare
from tests.support import demo_evidence as demo
from tests.support.gate import verifier_input
from tests.support.http_log import HTTP_BINDING, verdict
from tests.support.rulebook import PHRASES, RULES

CPU_EXCERPT = demo.CPU_ALERT["evidence_excerpt"]
DEMO_DATA = ToolSettings.demo().demo_data_dir


@pytest.mark.parametrize(
    ("text", "binding"),
    [
        ("payment-service 的 HighCPUUsage 告警正在触发，CPU 使用率为 80%", demo.CPU_ALERT),
        ("payment-service has a firing HighCPUUsage alert, current 80%", demo.CPU_ALERT),
        ("payment-service HighCPUUsage: CPU usage is 80% against a 92% threshold", demo.CPU_ALERT),
        ("SlowResponse is firing on user-service with p99=3s", demo.SLOW_ALERT),
        ("SlowResponse is firing on user-service with p99 of 3s", demo.SLOW_ALERT),
        ("SlowResponse is firing on user-service with threshold=4.2s", demo.SLOW_ALERT),
        ("user-service returned HTTP 500 on GET after 500ms", HTTP_BINDING),
        ("user-service returned HTTP 5200 on GET after 5200ms", HTTP_BINDING),
        ("payment-service HighCPUUsage alert has lasted for 80 minutes", demo.CPU_ALERT),
        ("order-service HikariPool-1 pool stats: 23/50 active, 50 waiting", demo.POOL_LOG),
        # no attribute named: 80% is one of two percentages, bound to the threshold
        ("payment-service HighCPUUsage alert with 80% CPU", demo.CPU_ALERT),
        ("payment-service HighCPUUsage alert reads 80%", demo.CPU_ALERT),
        # unbound values exchanged or repeated: each must be the excerpt's, in its order
        ("order-service OutOfMemoryError: Java heap space; heap 4 GB of 3.8 GB", demo.OOM_LOG),
        ("order-service OutOfMemoryError: Java heap space; heap 4 GB of 4 GB", demo.OOM_LOG),
    ],
)
def test_swapped_values_never_pass(text: str, binding: dict[str, Any]) -> None:
    result, status = verdict(text, binding)
    assert result != "PASS"
    assert status in {"REFUTED", "NOT_ENOUGH_INFO"}


@pytest.mark.parametrize(
    ("text", "binding"),
    [
        (
            "payment-service 的 HighCPUUsage 告警正在触发，CPU 使用率为 92%，阈值 80%",
            demo.CPU_ALERT,
        ),
        ("payment-service HighCPUUsage: threshold 80%, current 92%, for 25m", demo.CPU_ALERT),
        ("payment-service HighCPUUsage 当前值 ９２％，持续 25 分钟", demo.CPU_ALERT),
        ("payment-service CPU at 92% is above the 80% threshold (HighCPUUsage)", demo.CPU_ALERT),
        (
            "SlowResponse is firing on user-service with p99 of 4.2s, above a 3 s threshold",
            demo.SLOW_ALERT,
        ),
        ("SlowResponse on user-service: p99=4200ms for 10 minutes", demo.SLOW_ALERT),
        ("user-service returned HTTP 500 on GET after 5.2s", HTTP_BINDING),
        ("order-service HikariPool-1 is exhausted: 50/50 active, 23 waiting", demo.POOL_LOG),
        ("order-service HikariPool-1 request timed out after 30 s", demo.POOL_LOG),
        ("payment-service HighCPUUsage: CPU 92% (threshold 80%)", demo.CPU_ALERT),
        ("payment-service HighCPUUsage alert reads 92%", demo.CPU_ALERT),
        ("SlowResponse on user-service: p99=4200ms, lasting 10 minutes", demo.SLOW_ALERT),
    ],
)
def test_benign_variants_pass(text: str, binding: dict[str, Any]) -> None:
    assert verdict(text, binding) == ("PASS", "SUPPORTED")


@pytest.mark.parametrize(
    ("text", "label", "attribute"),
    [
        ("current=92%, threshold=80%", "threshold=80%", "threshold"),
        ("CPU 使用率为 92%", "使用率为 92%", "current"),
        ("p99 of 4.2s", "p99 of 4.2s", "p99"),
        ("request timed out after 5200ms", "after 5200ms", "duration"),
        ("持续 25 分钟", "持续 25 分钟", "duration"),
        ("active=50/50, waiting=23", "active=50", "active"),
        ("active=46/50, waiting=23", "active=46/50", "active of"),
        ("a 3 s threshold", "3 s threshold", "threshold"),
        ("restart_count=3", "restart_count=3", "restarts"),
        ("Query_time: 8.7s Lock_time: 0.002s", "Lock_time: 0.002s", "lock time"),
        ("order-service is exhausted: 50/50 active", "50/50 active", "active"),
        ("CPU 92% (threshold 80%)", "CPU 92%", "current"),
        ("payment-service 92%", "92%", ""),
    ],
)
def test_numbers_are_bound_to_what_they_measure(text: str, label: str, attribute: str) -> None:
    bound = {n.label: n.attribute for n in extract(text, rules=RULES).numbers}
    assert bound[label] == attribute


def test_an_unbound_number_needs_a_unique_value() -> None:
    alone = extract("HighCPUUsage, service=payment-service, current=92%", rules=RULES)
    [result] = [
        r
        for r in compare(extract("payment-service 92%", rules=RULES), alone, rules=RULES)
        if r.kind == "number"
    ]
    assert result.found
    [result] = [
        r
        for r in compare(
            extract("payment-service 80%", rules=RULES),
            extract(CPU_EXCERPT, rules=RULES),
            rules=RULES,
        )
        if r.kind == "number"
    ]
    assert not result.found and not result.conflict
    assert "threshold=80%" in result.detail


def test_check_output_names_each_fact_with_its_attribute_and_place() -> None:
    text = "payment-service has a firing HighCPUUsage alert, current 92%, threshold 80%"
    so = demo.output(demo.claim("claim-1", "observation", text, demo.CPU_ALERT))
    outcome = verify(verifier_input(so), rules=RULES, phrases=PHRASES)
    facts = {f.fact for f in outcome.facts_checked if f.kind == "number"}
    assert facts == {"92% [current]", "80% [threshold]"}
    [claim] = outcome.claim_checks
    assert "'current=92%'" in claim.reason and "'threshold=80%'" in claim.reason


def _alert_claims() -> list[tuple[str, str, str, str]]:
    """(claim, excerpt, current fact, threshold fact) the rules executor writes per demo alert."""
    now = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
    invocation = SimpleNamespace(tool_name="query_metrics")
    facts = templates()["alert_facts"]
    out = []
    for alert in alerts_at(now, DEMO_DATA):
        figures = refs.alert_figures(alert)
        if not all(v[0].isdigit() for v in figures.values()) or len(set(figures.values())) < 2:
            continue
        for lang in ("en", "zh"):
            claim = executor_claims._observation_text(invocation, alert, lang)  # type: ignore[arg-type]
            current = facts["current"][lang].format(value=figures["current"])
            threshold = facts["threshold"][lang].format(value=figures["threshold"])
            out.append((claim or "", refs.alert_text(alert), current, threshold))
    return out


def test_executor_alert_claims_refuse_a_swap_and_accept_a_reorder() -> None:
    cases = _alert_claims()
    assert len(cases) >= 4
    for claim, excerpt, current, threshold in cases:
        assert all(
            r.found
            for r in compare(
                extract(claim, rules=RULES), extract(excerpt, rules=RULES), rules=RULES
            )
        ), claim
        swapped = claim.replace(current, "\0").replace(threshold, "\1")
        values = [current.split()[-1], threshold.split()[-1]]
        swapped = swapped.replace("\0", current.replace(values[0], values[1]))
        swapped = swapped.replace("\1", threshold.replace(values[1], values[0]))
        assert not all(
            r.found
            for r in compare(
                extract(swapped, rules=RULES), extract(excerpt, rules=RULES), rules=RULES
            )
        ), swapped
        reordered = (
            claim.replace(current, "\0").replace(threshold, current).replace("\0", threshold)
        )
        assert reordered != claim
        assert all(
            r.found
            for r in compare(
                extract(reordered, rules=RULES), extract(excerpt, rules=RULES), rules=RULES
            )
        ), reordered
