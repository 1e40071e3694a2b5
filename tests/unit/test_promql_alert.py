"""The alert's own expression: read from Prometheus's rule, kept to the alert's series."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from services.executor.tools.base import ToolBackendError
from services.executor.tools.promql_alert import (
    ALERT_ID,
    Rules,
    agreeing,
    alert_items,
    expression,
)
from tests.support.series_items import END, ONSET, START, STEP
from tracebound.events import Alert

RULE = {
    "name": "PricingLatencyHigh",
    "query": "histogram_quantile(0.99, sum by (le, service) (rate(req_seconds_bucket[5m]))) > 1",
    "labels": {"severity": "page"},
}
ALERT = Alert(
    status="firing",
    labels={"alertname": "PricingLatencyHigh", "service": "pricing", "severity": "page"},
    startsAt=datetime.fromtimestamp(ONSET, UTC).isoformat(),
)


def test_the_expression_is_the_rules_left_hand_side_with_its_unit() -> None:
    read = expression([RULE], ALERT)
    assert read is not None and read.lhs.startswith("histogram_quantile(0.99")
    assert (read.unit, read.worse) == ("seconds", "rose")
    below = {**RULE, "query": "node_filesystem_avail_bytes / node_filesystem_size_bytes < 0.1"}
    fell = expression([below], ALERT)
    assert fell is not None and (fell.unit, fell.worse) == ("count", "fell")


def test_no_rule_or_no_single_comparison_reads_nothing() -> None:
    other = Alert(status="firing", labels={"alertname": "Other", "service": "pricing"})
    assert expression([RULE], other) is None
    either = {**RULE, "query": "a > 1 or b > 2"}
    assert expression([either], ALERT) is None
    # ``A and B`` fires with A's samples: A is the alert's expression
    both = {**RULE, "query": "a > 1 and b > 2"}
    found = expression([both], ALERT)
    assert found is not None and found.lhs == "a"
    vectors = {**RULE, "query": "a > b"}
    assert expression([vectors], ALERT) is None


def _series(value: float, **labels: str) -> dict[str, Any]:
    values = [[t, str(value)] for t in range(int(START), int(END) + 1, STEP)]
    return {"metric": labels, "values": values}


def test_only_series_the_alert_carries_are_kept() -> None:
    found = [_series(2.9, service="pricing"), _series(0.2, service="cart"), _series(1.0)]
    kept = agreeing(found, ALERT.labels)
    assert [r["metric"] for r in kept] == [{"service": "pricing"}, {}]


class _Rules(Rules):
    def read(self) -> list[dict[str, Any]]:
        if self.url == "down":
            raise ToolBackendError("prometheus: unreachable")
        return [RULE]


def test_the_items_are_marked_with_the_direction_toward_firing() -> None:
    ran: list[str] = []

    def run_range(promql: str, *_: object) -> list[Any]:
        ran.append(promql)
        return [_series(2.9, service="pricing"), _series(0.2, service="cart")]

    span = (datetime.fromtimestamp(START, UTC), datetime.fromtimestamp(END, UTC), STEP)
    onset = datetime.fromtimestamp(ONSET, UTC)
    envelope: dict[str, Any] = {"queries": []}
    items = alert_items(_Rules("up", 1.0), ALERT, run_range, (span, onset, 120), envelope)
    assert ran == [str(RULE["query"]).removesuffix(" > 1")]
    assert [(i["query"], i["labels"], i["worse"]) for i in items] == [
        (ALERT_ID, {"service": "pricing"}, "rose")
    ]
    assert "PricingLatencyHigh" in items[0]["what"]
    assert envelope["queries"] == [{"id": ALERT_ID, "promql": ran[0], "series": 1}]
    failed: dict[str, Any] = {"queries": []}
    assert alert_items(_Rules("down", 1.0), ALERT, run_range, (span, onset, 120), failed) == []
    assert failed["alert_errors"] == ["prometheus: unreachable"]


def test_a_rule_reads_what_is_measured_not_label_values() -> None:
    memory = {**RULE, "query": 'container_memory_rss{pod=~"error-reporter-.*"} / 1e9 > 0.9'}
    read = expression([memory], ALERT)
    assert read is not None and "error" not in read.names
    assert read.names == "container_memory_rss / 1e9"


def test_an_expression_pinned_with_at_gives_no_series() -> None:
    pinned = {**RULE, "query": "sum(rate(errors_total[5m] @ end())) > 1"}
    assert expression([pinned], ALERT) is None
    shifted = {**RULE, "query": "sum(rate(errors_total[5m] offset 1h)) > 1"}
    assert expression([shifted], ALERT) is not None


def test_a_templated_rule_label_matches_the_alerts_value() -> None:
    templated = {**RULE, "labels": {"severity": "page", "service": "{{ $labels.job }}"}}
    assert expression([templated], ALERT) is not None
