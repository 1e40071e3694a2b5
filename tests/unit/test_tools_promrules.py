"""Threshold, comparison and unit read from real-world alerting rule expressions."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace
from typing import cast

import pytest

from services.executor.claims import _observation_text
from services.executor.tools.prometheus import find_rule, map_alert, pick_sample
from services.executor.tools.promrules import generator_expr, parse_condition, unit_of
from services.executor.tools.refs import alert_figures, alert_text, with_unit
from tracebound.events import ToolInvocation

# expression → (left-hand side, comparison, threshold, unit); None = unknown.
SIMPLE = [
    ("vector(97) > 90", "vector(97)", ">", 90.0, None),
    ("up == 0", "up", "==", 0.0, None),
    ('up{job="mysql"} != 1', 'up{job="mysql"}', "!=", 1.0, None),
    (
        'checkout_cpu_usage_percent{service="checkout-service"} > 90',
        'checkout_cpu_usage_percent{service="checkout-service"}',
        ">",
        90.0,
        "percent",
    ),
    ("80 < node_memory_used_bytes", "node_memory_used_bytes", ">", 80.0, "bytes"),
    ("0.9 >= mem_ratio", "mem_ratio", "<=", 0.9, "ratio"),
    ("((mem_ratio)) > (0.9)", "((mem_ratio))", ">", 0.9, "ratio"),
    (
        "rate(process_cpu_seconds_total[1m]) >= 0.9",
        "rate(process_cpu_seconds_total[1m])",
        ">=",
        0.9,
        "seconds/s",
    ),
    (
        'sum by (job) (rate(http_requests_total{code=~"5.."}[5m])) > 10',
        'sum by (job) (rate(http_requests_total{code=~"5.."}[5m]))',
        ">",
        10.0,
        "/s",
    ),
    (
        "histogram_quantile(0.99, sum by (le) "
        "(rate(http_request_duration_seconds_bucket[5m]))) > 0.5",
        "histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket[5m])))",
        ">",
        0.5,
        "seconds",
    ),
    (
        'max without (instance) (jvm_memory_used_bytes{area="heap"}) > 3.5e9',
        'max without (instance) (jvm_memory_used_bytes{area="heap"})',
        ">",
        3.5e9,
        "bytes",
    ),
    (
        "node_filesystem_avail_bytes / node_filesystem_size_bytes * 100 < 10",
        "node_filesystem_avail_bytes / node_filesystem_size_bytes * 100",
        "<",
        10.0,
        None,
    ),
    (
        '(1 - avg by (instance) (rate(node_cpu_seconds_total{mode="idle"}[5m]))) * 100 > 80',
        '(1 - avg by (instance) (rate(node_cpu_seconds_total{mode="idle"}[5m]))) * 100',
        ">",
        80.0,
        None,
    ),
    ("increase(kube_pod_container_status_restarts_total[1h]) > 3", None, ">", 3.0, None),
    ("count(up == 0) > 0x2", "count(up == 0)", ">", 2.0, None),
    ("time() - last_success_timestamp_seconds > 3600", None, ">", 3600.0, None),
    ('x{a=">#"} > 3 # fires above 3 > 5', 'x{a=">#"}', ">", 3.0, None),
    ("a_seconds\n  # the budget\n  < -1e3", "a_seconds", "<", -1000.0, "seconds"),
    # ``A and B``, ``A unless B``: the samples, so the value and threshold, are A's
    ("a > 1 and b < 2", "a", ">", 1.0, None),
    ("a_seconds > 3 unless on(instance) maintenance == 1", "a_seconds", ">", 3.0, "seconds"),
    (
        "(sum(rate(e_total[5m])) / sum(rate(r_total[5m]))) > (14.4 * 0.001)"
        " and (sum(rate(e_total[1h])) / sum(rate(r_total[1h]))) > (14.4 * 0.001)",
        "(sum(rate(e_total[5m])) / sum(rate(r_total[5m])))",
        ">",
        14.4 * 0.001,
        None,
    ),
    (
        "max_over_time(queue_depth[10m]) >= +Inf",
        "max_over_time(queue_depth[10m])",
        ">=",
        None,
        None,
    ),
]

UNKNOWN = [
    ("absent(up{job='x'})", "no comparison"),
    ("a > 1 or b < 2", "with or"),
    ("a > 1 and b < 2 or c > 3", "with or"),
    ("rate(errors_total[5m]) > bool 0.1", "bool"),
    ("a > on(instance) group_left b", "two vectors"),
    ("a > ignoring(pod) b", "two vectors"),
    ("a > scalar(b)", "two vectors"),
    ("1 < a < 5", "more than one comparison"),
    ("", "no expression"),
]


@pytest.mark.parametrize(("expr", "lhs", "op", "threshold", "unit"), SIMPLE)
def test_simple_comparisons(
    expr: str, lhs: str | None, op: str, threshold: float | None, unit: str | None
) -> None:
    condition = parse_condition(expr)
    assert condition.note is None
    assert condition.comparison == op
    if threshold is None:  # +Inf parses as a number; comparing with it is still exact
        assert condition.threshold == float("inf")
    else:
        assert condition.threshold == threshold
    if lhs is not None:
        assert condition.lhs == lhs
    assert condition.lhs is not None and unit_of(condition.lhs) == unit


@pytest.mark.parametrize(("expr", "reason"), UNKNOWN)
def test_other_expressions_leave_the_threshold_unknown(expr: str, reason: str) -> None:
    condition = parse_condition(expr)
    assert (condition.lhs, condition.comparison, condition.threshold) == (None, None, None)
    assert condition.note and reason in condition.note


def test_units_are_never_guessed_beyond_the_naming_conventions() -> None:
    assert unit_of("http_requests_total") is None
    assert unit_of("count(node_cpu_seconds_total)") is None  # a count has no unit
    assert unit_of("predict_linear(disk_free_bytes[1h], 3600)") is None
    assert unit_of("a_bytes + b_bytes") is None
    assert unit_of("process_cpu_seconds_total") == "seconds"
    assert unit_of("clamp_max(heap_used_bytes, 1e9)") == "bytes"
    assert unit_of("max_over_time(queue_seconds[5m] offset 1h30m)") == "seconds"
    assert unit_of("avg_over_time(load_ratio[5m] @ 1609746000)") == "ratio"
    assert unit_of('label_replace(temp_celsius, "a", "$1", "b", "(.*)")') == "celsius"


NOW = datetime(2026, 12, 1, 12, 0, 30, tzinfo=UTC)
ALERT = {
    "labels": {"alertname": "HighCPUUsage", "service": "checkout-service", "pod": "p-1"},
    "annotations": {"summary": "checkout-service CPU is busy"},
    "state": "firing",
    "activeAt": "2026-12-01T12:00:00Z",
    "value": "9.7e+01",
}


def _rule(query: str, **extra: object) -> dict[str, object]:
    return {"name": "HighCPUUsage", "query": query, "duration": 60, "labels": {}, **extra}


def test_alert_completed_from_its_rule_and_live_value() -> None:
    rule = _rule('cpu_usage_percent{service="checkout-service"} > 90')
    item = map_alert(ALERT, NOW, rule, "97.5")
    assert (item["current_value"], item["threshold"], item["comparison"]) == ("97.5", "90", ">")
    assert (item["unit"], item["for"], item["duration"]) == ("percent", "1m", "30s")
    assert item["expr"] == rule["query"] and item["threshold_note"] is None
    text = alert_text(item)
    assert "current=97.5%, threshold=90%, comparison=>, for=1m, duration=30s" in text
    metrics_call = cast(ToolInvocation, SimpleNamespace(tool_name="query_metrics"))
    claim = _observation_text(metrics_call, item, "en")
    assert claim == (
        "checkout-service has a firing HighCPUUsage alert: current 97.5%, threshold 90%, for 30s, "
        'pod p-1, summary "checkout-service CPU is busy".'
    )


def test_unknown_threshold_is_said_with_its_reason() -> None:
    item = map_alert(ALERT, NOW, _rule("cpu > bool 90"), None)
    assert item["threshold"] is None and item["current_value"] == "97"  # the alert's value
    assert alert_figures(item)["threshold"] == "unknown"
    assert "threshold=unknown, threshold_note=the comparison uses bool" in alert_text(item)
    orphan = map_alert(ALERT, NOW, None, None)
    assert orphan["threshold_note"] and "no alerting rule" in orphan["threshold_note"]
    assert orphan["expr"] is None and orphan["for"] is None


def test_unit_from_the_alert_or_rule_wins_over_the_metric_name() -> None:
    rule = _rule("latency_seconds > 2", annotations={"unit": "ms"})
    assert map_alert(ALERT, NOW, rule, "3")["unit"] == "ms"
    labelled = {**ALERT, "labels": {**ALERT["labels"], "unit": "s"}}  # type: ignore[dict-item]
    assert map_alert(labelled, NOW, rule, "3")["unit"] == "s"


def test_rule_of_an_alert_by_name_and_labels() -> None:
    labels = {"alertname": "HighCPUUsage", "service": "checkout-service", "severity": "page"}
    warn = _rule("a > 80", labels={"severity": "warn"})
    page = _rule("a > 95", labels={"severity": "page"})
    other = {**page, "name": "Other"}
    assert find_rule([other, warn, page], labels) is page
    twin = _rule("b > 95", labels={"severity": "page"}, alerts=[{"labels": labels}])
    assert find_rule([page, twin], labels) is twin
    assert find_rule([warn], labels) is None


def test_live_value_of_the_alerts_own_series() -> None:
    labels = {"alertname": "A", "service": "s", "pod": "p-2"}
    result = [
        {"metric": {"__name__": "cpu", "service": "s", "pod": "p-1"}, "value": [1, "91"]},
        {"metric": {"__name__": "cpu", "service": "s", "pod": "p-2"}, "value": [1, "88.5"]},
    ]
    assert pick_sample(result, labels) == "88.5"
    assert pick_sample([{"metric": {}, "value": [1, "97"]}], labels) == "97"
    assert pick_sample([1, "42"], labels) == "42"  # a scalar result
    assert pick_sample([{"metric": {"pod": "p-9"}, "value": [1, "1"]}], labels) is None


def test_with_unit_keeps_values_already_written_with_one() -> None:
    assert with_unit("4.2s", "seconds") == "4.2s"
    assert with_unit("0.37", "ratio") == "0.37 ratio"
    assert with_unit("1.5", "seconds") == "1.5s"
    assert with_unit(None, "percent") is None
    assert with_unit("97", None) == "97"


def test_expression_of_a_generator_url() -> None:
    url = (
        "http://prometheus:9090/graph?g0.expr=checkout_cpu_usage_percent%7Btb_test%3D%22a%22%7D"
        "+%3E+90&g0.tab=1"
    )
    expr = generator_expr(url)
    assert expr == 'checkout_cpu_usage_percent{tb_test="a"} > 90'
    condition = parse_condition(expr)
    assert (condition.comparison, condition.threshold) == (">", 90.0)
    assert condition.lhs and unit_of(condition.lhs) == "percent"
    assert generator_expr("http://prometheus:9090/graph?g0.tab=1") is None
    assert generator_expr("") is None
