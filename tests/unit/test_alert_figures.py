"""An alert's value and threshold read from its own words, printed plainly, one onset."""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import pytest

from replay.chain import Chain
from services.composer.opening import opening_lines
from services.executor.tools import RunContext
from services.executor.tools.logs import NoLogBackend, QueryLogsTool
from services.executor.tools.metrics import QueryMetricsTool
from services.executor.tools.prometheus import (
    PrometheusAlertSource,
    format_value,
    map_alert,
    request_onset,
)
from services.executor.tools.promql_constant import constant
from services.executor.tools.promrules import parse_condition
from services.executor.tools.refs import alert_text
from services.executor.tools.request_alerts import RequestAlertSource, map_request_alert
from services.executor.tools.settings import NO_LOGS_BACKEND
from tracebound.alert_figures import alert_figures, parse_figure
from tracebound.alert_printing import binary_bytes, display, plain, stated
from tracebound.events import Alert, DiagnosisRequest, DiagnosisRequested, Producer, ToolBackend

REQUESTED_AT = datetime(2026, 12, 1, 10, 5, 0, tzinfo=UTC)
STARTS_AT = "2026-12-01T10:00:00Z"
ACTIVE_AT = "2026-12-01T09:59:30Z"  # Prometheus's activeAt: the ``for`` hold earlier
CPU_DESCRIPTION = "CPU usage of 10.0.0.7:9100 is 93% (threshold 80%)"


@pytest.mark.parametrize(
    ("text", "number", "unit"),
    [
        ("93%", 93.0, "percent"),
        ("0.931", 0.931, None),
        ("93.1 %", 93.1, "percent"),
        ("1.2k", 1200.0, None),
        ("3.4M", 3.4e6, None),
        ("512Mi", 512 * 2**20, "bytes"),
        ("1.5 GiB", 1.5 * 2**30, "bytes"),
        ("2 GB", 2e9, "bytes"),
        ("1.2e+09", 1.2e9, None),
        ("3h 12m", 3 * 3600 + 12 * 60, "seconds"),
        ("45s", 45.0, "seconds"),
        ("1d 2h", 26 * 3600, "seconds"),
        ("1,234.5", 1234.5, None),
    ],
)
def test_figures_keep_their_text_with_number_and_unit(
    text: str, number: float, unit: str | None
) -> None:
    figure = parse_figure(text)
    assert figure is not None
    assert figure.text == text and figure.number == pytest.approx(number) and figure.unit == unit


@pytest.mark.parametrize("text", ["10.0.0.7:9100", "v2.3.1", "2026-12-01", "abc", "7f9"])
def test_identifiers_are_not_figures(text: str) -> None:
    assert parse_figure(text) is None


@pytest.mark.parametrize(
    ("text", "name", "value", "threshold"),
    [
        (CPU_DESCRIPTION, "HighCPUUsage", "93%", "80%"),
        ("Memory usage is above 90%: currently 93.1 %", "HighMemoryUsage", "93.1 %", "90%"),
        ("Error rate 5.2% over the SLO of 1%", "HighErrorRate", "5.2%", "1%"),
        ("JVM heap at 3.4 GiB of 4 GiB limit", "JvmHeapHigh", "3.4 GiB", "4 GiB"),
        ("Queue depth reached 1.2k, limit 1k", "QueueBacklog", "1.2k", "1k"),
        ("Replication lag = 3h 12m (target 1h)", "ReplicationLag", "3h 12m", "1h"),
        ("Availability is 97.1% (objective: 99.5%)", "SloBurn", "97.1%", "99.5%"),
        ("Free memory 512Mi below 1Gi", "LowMemory", "512Mi", "1Gi"),
        ("Predicted usage: 1.2e+09 exceeds 1e9", "DiskFill", "1.2e+09", "1e9"),
        ("实例 web-1 CPU 使用率为 93%，超过阈值 80%", "HighCPUUsage", "93%", "80%"),
        ("当前值 0.931，阈值 0.9", "HighMemoryUsage", "0.931", "0.9"),
        ("CPU 使用率 93% 高于 80%", "HighCPUUsage", "93%", "80%"),
        ("磁盘使用率达到 91%，低于 95% 时恢复", "DiskFull", "91%", "95%"),
    ],
)
def test_value_and_threshold_from_the_words(
    text: str, name: str, value: str, threshold: str
) -> None:
    read = alert_figures({"description": text}, name)
    assert read.value is not None and read.value.text == value
    assert read.threshold is not None and read.threshold.text == threshold


@pytest.mark.parametrize(
    ("notes", "name"),
    [
        ({"description": "Pod restarted 5 times in 10m"}, "KubePodCrashLooping"),
        ({"description": "CPU usage is 93% and 97%"}, "HighCPUUsage"),  # two values
        ({"summary": "CPU is 93%", "description": "CPU is 88%"}, "HighCPUUsage"),
        ({"description": "thresholds 80% and limit 90%"}, "HighCPUUsage"),
        ({"description": "version v2.3.1 deployed on 10.0.0.7:9100"}, "Deploy"),
        ({"description": "3 pods of web are unhealthy"}, "Unhealthy"),
        ({"description": "host 10.0.0.7 磁盘告警"}, "DiskFull"),
        # an objective is a threshold, never the value ("objective: 98% under 2.5s")
        ({"description": "4.1% of logins took over 2.5s (objective: 98% under 2.5s)"}, "Slow"),
    ],
)
def test_ambiguous_or_absent_figures_are_none(notes: dict[str, str], name: str) -> None:
    read = alert_figures(notes, name)
    assert read.value is None
    if "thresholds" in notes.get("description", ""):
        assert read.threshold is None


def test_the_rules_threshold_decides_which_number_is_the_threshold() -> None:
    read = alert_figures({"summary": "CPU 93% vs 80%"}, "HighCPUUsage", threshold=80.0)
    assert read.threshold is not None and read.threshold.text == "80%"
    ratio = alert_figures(
        {"summary": "Memory 93.1%, alerting at 90%"}, "HighMemoryUsage", threshold=0.9
    )
    assert ratio.threshold is not None and ratio.threshold.text == "90%"
    assert ratio.value is not None and ratio.value.text == "93.1%"


def test_a_bare_number_takes_the_unit_the_words_state() -> None:
    notes = {"description": CPU_DESCRIPTION}
    read = stated(notes, value="93", threshold="80", unit=None, rule_threshold=80.0)
    assert (read.value, read.threshold, read.unit) == ("93%", "80%", None)
    other = stated(notes, value="95", threshold="80", unit="percent", rule_threshold=80.0)
    assert (other.value, other.threshold, other.unit) == ("95", "80", "percent")


def test_a_percent_metric_the_words_state_100_times_larger_is_a_fraction() -> None:
    # Micrometer's jvm_gc_overhead_percent is 0.38 for 38 %
    notes = {"description": "GC overhead of kelpie is 38% of CPU time (threshold 30%)."}
    read = stated(notes, value="0.38", threshold="0.3", unit="percent", rule_threshold=0.3)
    assert (read.value, read.threshold) == ("38%", "30%")
    plain_percent = {"description": "CPU usage is 95% (threshold 80%)."}
    other = stated(plain_percent, value="95", threshold="80", unit="percent", rule_threshold=80.0)
    assert (other.value, other.threshold) == ("95", "80")


def test_the_same_value_in_summary_and_description_is_one_value() -> None:
    notes = {"summary": "Memory at 0.931", "description": "Memory usage is 93.1%"}
    read = alert_figures(notes, "HighMemoryUsage")
    assert read.value is not None and read.value.text == "93.1%"


def test_links_are_not_read() -> None:
    notes = {"runbook_url": "https://x/is 93%", "summary": "CPU high"}
    assert alert_figures(notes, "HighCPUUsage").value is None


@pytest.mark.parametrize(
    ("number", "text"),
    [
        (1.2e9, "1200000000"),
        (1e-7, "0.0000001"),
        (97.0, "97"),
        (0.93123456, "0.931235"),
        (1234567.8, "1234568"),
        (-2.5e-5, "-0.000025"),
        (0.0, "0"),
    ],
)
def test_numbers_never_print_in_scientific_notation(number: float, text: str) -> None:
    assert plain(number) == text
    assert format_value(repr(number)) == text
    assert "e" not in (format_value(f"{number:e}") or "")


def test_bytes_print_in_binary_units_and_ratios_as_percent() -> None:
    assert binary_bytes(536_000_000) == "511.2 MiB"
    assert binary_bytes(1.5 * 2**30) == "1.5 GiB"
    assert binary_bytes(512) == "512 B"
    assert display("1.2e+09", "bytes") == "1.1 GiB"
    assert display("0.931", "ratio", percent_text=True) == "93.1%"
    assert display("0.931", "ratio", percent_text=False) == "0.931"
    assert display("1.2e+09", None) == "1200000000"
    assert display("97.50", None) == "97.50"  # a figure as written keeps its text


@pytest.mark.parametrize(
    ("expr", "threshold"),
    [
        ("x > (0.9 * 100)", 90.0),
        ("x > 80/100", 0.8),
        ("x > 1024*1024*512", 536870912.0),
        ("(0.9 * 100) < x", 90.0),
        ("x >= 2 ^ 3 ^ 2", 512.0),
        ("x > -2 ^ 2", -4.0),
        ("x < 1e3 - (10 % 3)", 999.0),
        ("x > 0x10 * 2", 32.0),
    ],
)
def test_constant_expressions_are_thresholds(expr: str, threshold: float) -> None:
    condition = parse_condition(expr)
    assert condition.threshold == pytest.approx(threshold)
    assert condition.lhs == "x" and condition.note is None and condition.reference is None


@pytest.mark.parametrize("text", ["1 +", "(1", "2 * y", "__import__('os')", "1 ** 2", ""])
def test_constants_are_numbers_and_operators_only(text: str) -> None:
    assert constant(text) is None


def test_a_comparison_with_a_series_names_it_never_unknown() -> None:
    expr = (
        "container_memory_working_set_bytes > 0.9 * "
        'kube_pod_container_resource_limits{resource="memory"}'
    )
    condition = parse_condition(expr)
    assert condition.threshold is None and condition.note and "two vectors" in condition.note
    reference = 'compared with 0.9 * kube_pod_container_resource_limits{resource="memory"}'
    assert condition.reference == reference
    unstated = {**PROM_ALERT, "annotations": {"summary": "memory near its limit"}}
    item = map_alert(unstated, REQUESTED_AT, {"name": "HighCPUUsage", "query": expr}, None)
    assert item["threshold"] == reference and item["threshold_note"] is None
    assert f"threshold={reference}" in alert_text(item) and "unknown" not in alert_text(item)
    long = parse_condition("a > " + " + ".join(f"metric_{i}" for i in range(40)))
    assert long.reference is not None and len(long.reference) <= len("compared with ") + 120


LABELS = {"alertname": "HighCPUUsage", "service": "web", "instance": "10.0.0.7:9100"}
PROM_ALERT: dict[str, Any] = {
    "labels": LABELS,
    "annotations": {"description": CPU_DESCRIPTION, "runbook_url": "https://rb.example/cpu"},
    "state": "firing",
    "activeAt": ACTIVE_AT,
    "value": "9.3e+01",
}
REQUEST_ALERT = Alert(
    status="firing",
    labels={**LABELS, "cluster": "eu-1"},  # an external label Alertmanager added
    annotations=dict(PROM_ALERT["annotations"]),
    startsAt=STARTS_AT,
)


class CannedPrometheus(PrometheusAlertSource):
    """Prometheus's three answers for one alert, no server."""

    def __init__(self) -> None:
        super().__init__(
            "http://prometheus.test", 1.0, now=lambda: datetime(2030, 1, 1, tzinfo=UTC)
        )

    def _get(self, path: str, params: Mapping[str, str]) -> Any:
        if path == "/api/v1/alerts":
            return {"alerts": [PROM_ALERT]}
        if path == "/api/v1/rules":
            rule = {"type": "alerting", "name": "HighCPUUsage", "query": "cpu_usage_percent > 80"}
            return {"groups": [{"rules": [rule]}]}
        return {"result": []}


def test_one_onset_for_the_item_and_the_opening_line() -> None:
    ctx = RunContext("r", alerts=(REQUEST_ALERT,), requested_at=REQUESTED_AT)
    [item] = CannedPrometheus().fetch_alerts(ctx)
    assert item["active_at"] == STARTS_AT  # the request's startsAt, not activeAt
    assert item["duration"] == "5m"  # to the request time, never the wall clock
    assert (item["current_value"], item["threshold"], item["unit"]) == ("93", "80", "percent")
    assert item["runbook_url"] == "https://rb.example/cpu"
    assert "runbook_url=https://rb.example/cpu" in alert_text(item)
    [line] = opening_lines((REQUEST_ALERT,), "en")[1:]
    assert "firing since 2026-12-01 10:00:00 UTC" in line
    request_item = map_request_alert(REQUEST_ALERT, REQUESTED_AT)
    assert (request_item["active_at"], request_item["duration"]) == (STARTS_AT, "5m")
    # without the request's alert: Prometheus's activeAt
    [alone] = CannedPrometheus().fetch_alerts(RunContext("r", requested_at=REQUESTED_AT))
    assert (alone["active_at"], alone["duration"]) == (ACTIVE_AT, "5m30s")


def test_onset_needs_exactly_one_matching_alert() -> None:
    assert request_onset(LABELS, (REQUEST_ALERT,)) is not None
    other = REQUEST_ALERT.model_copy(update={"labels": {**LABELS, "instance": "10.0.0.8:9100"}})
    assert request_onset(LABELS, (other,)) is None
    twin = REQUEST_ALERT.model_copy(update={"labels": {**LABELS, "cluster": "us-1"}})
    assert request_onset(LABELS, (REQUEST_ALERT, twin)) is None


def test_the_opening_line_states_value_threshold_and_runbook_in_both_languages() -> None:
    assert opening_lines((REQUEST_ALERT,), "en")[1] == (
        "- HighCPUUsage on web (10.0.0.7:9100): value 93%, threshold 80%, "
        "firing since 2026-12-01 10:00:00 UTC, runbook https://rb.example/cpu"
    )
    assert "当前值 93%，阈值 80%" in opening_lines((REQUEST_ALERT,), "zh-CN")[1]


def _answer(alert: Alert, language: str) -> tuple[str, str]:
    metrics = QueryMetricsTool(RequestAlertSource(), ToolBackend(name="request"))
    logs = QueryLogsTool(NoLogBackend(NO_LOGS_BACKEND), "local", ToolBackend(name="none"))
    request = DiagnosisRequest(
        mode="AIOPS",
        query="Alertmanager: HighCPUUsage on web",
        alerts=(alert,),
        language=language,
        requested_at=REQUESTED_AT,
    )
    event = DiagnosisRequested(run_id="r", producer=Producer(service="test"), request=request)
    result = Chain.build({metrics.name: metrics, logs.name: logs}).run(event)
    assert result.verdict is not None and result.answer is not None
    return result.verdict.verdict, result.answer.user_facing_answer


@pytest.mark.parametrize(
    ("language", "stated"),
    [("en", "current 93%, threshold 80%"), ("zh-CN", "当前值 93%，阈值 80%")],
)
def test_a_value_stated_only_in_the_description_is_answered_and_passes(
    language: str, stated: str
) -> None:
    verdict, text = _answer(REQUEST_ALERT, language)
    assert verdict == "PASS"
    assert stated in text and CPU_DESCRIPTION in text and "unstated" not in text


def test_a_ratio_alert_speaking_in_percent_is_answered_in_percent() -> None:
    expr = urllib.parse.quote("container_memory_usage_ratio > (0.9)")
    alert = REQUEST_ALERT.model_copy(
        update={
            "labels": {**LABELS, "alertname": "HighMemoryUsage"},
            "annotations": {"description": "Memory usage is 93.1% of its limit"},
            "generatorURL": f"http://prometheus.test/graph?g0.expr={expr}",
        }
    )
    verdict, text = _answer(alert, "en")
    assert verdict == "PASS"
    assert "current 93.1%, threshold 90%" in text


def test_a_live_ratio_reads_as_the_percent_its_description_states() -> None:
    figures = stated(
        {"description": "Error ratio of parcel-router is 7.27% (threshold 5%)"},
        value="0.072701",
        threshold=0.05,
        unit=None,
    )
    assert (figures.value, figures.threshold) == ("7.27%", "5%")


def test_a_value_compared_with_a_percent_threshold_is_a_percent() -> None:
    figures = stated(
        {"summary": "Filesystem has less than 8% space left"},
        value="7.4",
        threshold=8,
        unit=None,
    )
    assert (figures.value, figures.threshold) == ("7.4%", "8%")


def test_a_value_compared_with_a_fraction_the_words_state_in_percent_is_a_percent() -> None:
    # the description gives the value only as a template the alert item no longer holds
    figures = stated(
        {"summary": "kyc gRPC server error ratio above 10%", "description": "calls ended badly"},
        value="0.240313",
        threshold=0.1,
        unit=None,
    )
    assert (figures.value, figures.threshold) == ("24.03%", "10%")
    free = stated(
        {"description": "Volume data-0 has 3.847% space left"},
        value="0.038471",
        threshold=0.06,
        unit=None,
    )
    assert (free.value, free.threshold) == ("3.847%", "6%")
    same = stated({"summary": "error ratio above 0.1"}, value="0.24", threshold=0.1, unit=None)
    assert (same.value, same.threshold) == ("0.24", "0.1"), "no percent stated, none printed"


def test_a_window_is_never_the_threshold_of_a_figure_in_another_unit() -> None:
    text = "5xx ratio over 5m is 34.2%, above 14.4x the 0.1% budget (1h window also above)."
    read = alert_figures({"description": text}, "ApiErrorBudgetBurn")
    assert read.value is not None and read.value.text == "34.2%"
    assert read.threshold is None  # not "5m"
    latency = alert_figures({"description": "p99 latency is 2.3s, over 1s"}, "ApiLatencyHigh")
    assert latency.threshold is not None and latency.threshold.text == "1s"
