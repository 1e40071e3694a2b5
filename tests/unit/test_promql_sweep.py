"""The sweep: which of a service's metric names are read, how, and which series are kept."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from services.executor.tools import promql_sweep as sweep
from services.executor.tools.base import RunContext, ToolBackendError
from services.executor.tools.prometheus_scope import QueryPrometheusParams
from services.executor.tools.promql import catalogue
from services.executor.tools.query_prometheus import QueryPrometheusTool
from tests.support.series_items import ONSET, item
from tracebound.events import Alert, ToolBackend

BOOK = catalogue()
assert BOOK.sweep is not None
SWEEP = BOOK.sweep


def test_names_a_query_reads_or_that_say_no_trouble_are_not_swept() -> None:
    names = [
        "hikaricp_connections_pending",  # read by pool_pending
        "app_feature_flag_enabled",  # matched by feature_flags' name pattern
        "jvm_gc_pause_seconds_count",  # its histogram family is read by gc_time_ratio
        "orders_widgets",  # no word of trouble
        "orders_outbox_pending",
        "orders_webhook_failures_total",
        "orders_latency_seconds_bucket",  # a bucket is never swept
        'orders_errors_total{job="x"} or vector(1) #',  # not a metric name: never put in PromQL
    ]
    assert sweep.candidates(names, BOOK, SWEEP) == [
        "orders_webhook_failures_total",
        "orders_outbox_pending",
    ]


def test_at_most_max_names_are_read_the_most_telling_first() -> None:
    names = [f"svc_q{i}_inflight" for i in range(30)] + ["svc_panics_total"]
    chosen = sweep.candidates(names, BOOK, SWEEP)
    assert len(chosen) == SWEEP.max_names and chosen[0] == "svc_panics_total"


def test_counters_read_as_rates_and_gauges_as_levels_in_their_unit() -> None:
    assert sweep.unit_of("svc_retries_total") == "/s"
    assert sweep.unit_of("svc_sent_bytes_total") == "bytes/s"
    assert sweep.unit_of("svc_buffer_bytes") == "bytes"
    assert sweep.unit_of("svc_wait_seconds") == "seconds"
    assert sweep.unit_of("svc_pending") == "count"
    names = ["svc_retries_total", "svc_pending", "svc_batch_seconds_sum", "svc_batch_seconds_count"]
    rate, level, mean = (sweep.read(n, names, SWEEP) for n in names[:3])
    assert rate.render('service="svc"').startswith("sum without (instance, pod")
    assert 'rate(svc_retries_total{service="svc"}[5m])' in rate.render('service="svc"')
    assert level.render("x").startswith("max without (") and level.unit == "count"
    assert (mean.what, mean.unit) == ("mean svc_batch_seconds", "seconds")
    assert "rate(svc_batch_seconds_count{x}[5m])" in mean.render("x")
    lone = sweep.read("svc_wait_seconds_sum", ["svc_wait_seconds_sum"], SWEEP)
    assert (lone.what, lone.unit) == ("svc_wait_seconds_sum", "/s")


def test_only_a_change_near_the_onset_is_kept() -> None:
    onset = datetime.fromtimestamp(ONSET, UTC)
    near = item(lambda i: 10.0 if i < 200 else 900.0, "count", "sweep")
    early = item(lambda i: 10.0 if i < 10 else 900.0, "count", "sweep")  # ~2h before
    flat = item(lambda i: 10.0, "count", "sweep")
    assert [sweep.near_onset(x, onset, SWEEP) for x in (near, early, flat)] == [True, False, False]


def test_a_family_the_catalogue_reads_by_pattern_is_not_swept_again() -> None:
    # db_query_p99 reads any *_query_duration_seconds_bucket by a name pattern
    names = ["orders_query_duration_seconds_sum", "orders_query_duration_seconds_count"]
    assert sweep.candidates(names, BOOK, SWEEP) == []


def test_a_name_holding_the_word_scope_is_put_in_as_it_is() -> None:
    planned = sweep.read("app_SCOPE_errors_total", ["app_SCOPE_errors_total"], SWEEP)
    assert 'rate(app_SCOPE_errors_total{service="svc"}[5m])' in planned.render('service="svc"')


def _range_result(points: list[float], **labels: str) -> dict[str, Any]:
    start = ONSET - 238 * 30
    return {
        "metric": {"__name__": "svc_queue_pending", **labels},
        "values": [[start + i * 30, str(v)] for i, v in enumerate(points)],
    }


class _Prometheus(QueryPrometheusTool):
    """A Prometheus whose answers a test sets: names, and series per swept name."""

    def __init__(self, names: list[str], series: dict[str, list[dict[str, Any]]]) -> None:
        super().__init__("http://127.0.0.1:9", 1.0, ToolBackend(name="prometheus"))
        self.names, self.series = names, series

    def _range(self, promql: str, start: datetime, end: datetime, step: int) -> list[Any]:
        for name, found in self.series.items():
            if f"({name}{{" in promql:
                if not found:
                    raise ToolBackendError(f"prometheus: HTTP 422 for {name}")
                return found
        return []

    def _names(self, scope: str, labels: Any, span: Any, listings: Any) -> tuple[str, list[str]]:
        return 'service="svc"', self.names


def _swept(tool: QueryPrometheusTool) -> Any:
    alert = Alert(
        status="firing",
        labels={"alertname": "A", "service": "svc"},
        startsAt=datetime.fromtimestamp(ONSET, UTC).isoformat(),
    )
    params = QueryPrometheusParams(queries="request_rate", service="svc", sweep=True)
    now = datetime.fromtimestamp(ONSET + 60, UTC)
    return tool.run(params, RunContext(run_id="r", alerts=(alert,), requested_at=now))


def test_the_series_that_changed_near_the_onset_is_kept_however_many_changed_earlier() -> None:
    # six series that stepped up two hours before crowd a query's six places
    early = [_range_result([1.0] * 5 + [900.0] * 236, queue=f"q{i}") for i in range(6)]
    near = _range_result([10.0] * 200 + [40.0] * 41, queue="orders")
    tool = _Prometheus(
        ["svc_queue_pending", "svc_publish_failures_total"],
        {"svc_queue_pending": [*early, near], "svc_publish_failures_total": []},
    )
    outcome = _swept(tool)
    swept = [i for i in outcome.output["series"] if i["query"] == "sweep"]
    assert [i["labels"] for i in swept] == [{"queue": "orders"}]
    # a failed sweep query is recorded; the other names are still read
    assert "HTTP 422 for svc_publish_failures_total" in outcome.output["sweep_errors"][0]


class _Failing(QueryPrometheusTool):
    """A Prometheus that lists names but fails every range query of the sweep."""

    def _range(self, promql: str, start: datetime, end: datetime, step: int) -> list[Any]:
        if "svc_outbox_pending" in promql:
            raise ToolBackendError("prometheus: HTTP 422")
        return []

    def _names(self, scope: str, labels: Any, span: Any, listings: Any) -> tuple[str, list[str]]:
        return 'service="svc"', ["svc_outbox_pending"]


def test_a_failed_sweep_query_leaves_the_declared_queries_evidence_standing() -> None:
    tool = _Failing("http://127.0.0.1:9", 1.0, ToolBackend(name="prometheus"))
    alert = Alert(
        status="firing",
        labels={"alertname": "A", "service": "svc"},
        startsAt="2026-12-05T10:00:00Z",
    )
    params = QueryPrometheusParams(queries="request_rate", service="svc", sweep=True)
    outcome = tool.run(params, RunContext(run_id="r", alerts=(alert,)))
    assert outcome.success  # no series: a supported "no evidence", not a failed call
    assert "HTTP 422" in outcome.output["sweep_errors"][0]
