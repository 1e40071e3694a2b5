"""The sweep on a real Prometheus: a service's own metric that changed near the alert is read.

Debian's Prometheus starts on a TSDB folder backfilled with ``promtool tsdb
create-blocks-from openmetrics``: two hours of a service whose metric names no
catalogue query knows. A call with ``sweep=true`` must read the one whose change
began near the alert's onset, and leave out the one that rose long before it, the
one whose name says nothing of trouble, and the one a catalogue query already reads.
Its claim, worded from the item, passes the verifier against the item's ref text.
Every catalogue query runs there, a refused one costs only itself, and the error
ratio by version gives a version without 5xx its 0.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from services.executor.claim_templates import templates
from services.executor.series_claims import wording
from services.executor.tools import promql_sweep
from services.executor.tools.base import RunContext
from services.executor.tools.prometheus_scope import QueryPrometheusParams
from services.executor.tools.promql import catalogue, render
from services.executor.tools.query_prometheus import QueryPrometheusTool
from services.executor.tools.series_text import series_text
from services.verifier.structure import check_claim
from tests.support.incident_stack import backfill
from tests.support.openmetrics import document, family
from tests.support.prometheus import running_monitoring
from tracebound.events import Alert, ToolBackend

SERVICE, NAMESPACE = "ledger-sweep", "sweep-test"
LABELS = f'service="{SERVICE}",namespace="{NAMESPACE}",job="ledger",instance="10.9.0.4:8080"'


def _openmetrics(end: float) -> str:
    """Two hours at one sample a minute, ending ``end``: four metrics of the service."""

    def failures(m: int) -> float:  # 0.01/s until 100 minutes before the end, then 3/s
        return (min(m, -100) + 120) * 0.6 + max(0, m + 100) * 180

    def after_20(before: float, later: float) -> Callable[[int], float]:
        return lambda m: before if m < -20 else later

    return document(
        family(
            "ledger_outbox_pending",
            "gauge",
            {f'{LABELS},topic="payments"': after_20(40, 4200)},
            end,
        ),
        family("ledger_webhook_failures", "counter", {LABELS: failures}, end),
        family("ledger_widgets", "gauge", {LABELS: after_20(5, 500)}, end),
        family(
            "hikaricp_connections_pending",
            "gauge",
            {f'{LABELS},pool="HikariPool-1"': after_20(0, 9)},
            end,
        ),
    )


def test_the_sweep_reads_the_services_own_metric_that_changed_near_the_onset(
    tmp_path: Path,
) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    data = backfill(_openmetrics(now.timestamp()), tmp_path / "prometheus")
    onset = now - timedelta(minutes=2)
    alert = Alert(
        status="firing",
        labels={"alertname": "LedgerOutboxBacklog", "service": SERVICE, "namespace": NAMESPACE},
        startsAt=onset.isoformat(),
    )
    with running_monitoring(tmp_path / "monitoring", "http://127.0.0.1:9/", data_dir=data) as mon:
        tool = QueryPrometheusTool(mon.prometheus_url, 5.0, ToolBackend(name="prometheus"))
        params = QueryPrometheusParams(queries="request_rate", service=SERVICE, sweep=True)
        outcome = tool.run(params, RunContext(run_id="r", alerts=(alert,), requested_at=now))
    assert outcome.success, outcome.error_message
    swept = [i for i in outcome.output["series"] if i["query"] == "sweep"]
    assert [i["what"] for i in swept] == ["ledger_outbox_pending"], outcome.output["queries"]
    [item] = swept
    assert item["labels"] == {"topic": "payments"}
    assert item["facts"]["direction"] == "rose"
    ref = series_text(item)
    claim = wording(item, "en", templates()["series"])
    assert all(r.found and not r.conflict for r in check_claim(claim, [ref])), (claim, ref)
    ran = [q["promql"] for q in outcome.output["queries"] if q["id"] == "sweep"]
    assert not any("hikaricp" in q or "ledger_widgets" in q for q in ran), ran


def test_every_catalogue_query_is_valid_promql_on_a_real_prometheus(tmp_path: Path) -> None:
    """Each template, scoped, runs as a range query; the sweep's own queries too."""
    now = datetime.now(UTC).replace(microsecond=0)
    data = backfill(_openmetrics(now.timestamp()), tmp_path / "prometheus")
    book = catalogue()
    selector = f'namespace="{NAMESPACE}",service="{SERVICE}"'
    queries = {qid: render(q, selector) for qid, q in book.queries.items()}
    assert book.sweep is not None
    names = ["ledger_outbox_pending", "ledger_webhook_failures_total", "ledger_wait_seconds_sum"]
    for name in names:
        queries[f"sweep:{name}"] = promql_sweep.read(name, names, book.sweep).render(selector)
    failed: dict[str, str] = {}
    with running_monitoring(tmp_path / "monitoring", "http://127.0.0.1:9/", data_dir=data) as mon:
        span = {"start": f"{now.timestamp() - 7200:.0f}", "end": f"{now.timestamp():.0f}"}
        for qid, promql in queries.items():
            reply = mon.client.get(
                f"{mon.prometheus_url}/api/v1/query_range",
                params={"query": promql, **span, "step": "60"},
            )
            if reply.status_code != 200 or reply.json().get("status") != "success":
                failed[qid] = reply.text[:300]
    assert len(queries) == len(book.queries) + len(names)
    assert not failed, failed


def test_a_query_prometheus_refuses_costs_that_query_only(tmp_path: Path) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    data = backfill(_openmetrics(now.timestamp()), tmp_path / "prometheus")
    book = catalogue()
    # an exported metric, so the listing lets the broken template run
    broken = book.queries["request_rate"].model_copy(
        update={"promql": "sum(rate(ledger_webhook_failures_total{SCOPE}[5m])"}
    )
    book = book.model_copy(update={"queries": {**book.queries, "broken": broken}})
    alert = Alert(
        status="firing",
        labels={"alertname": "LedgerOutboxBacklog", "service": SERVICE, "namespace": NAMESPACE},
        startsAt=(now - timedelta(minutes=2)).isoformat(),
    )
    ctx = RunContext(run_id="r", alerts=(alert,), requested_at=now)
    with running_monitoring(tmp_path / "monitoring", "http://127.0.0.1:9/", data_dir=data) as mon:
        tool = QueryPrometheusTool(
            mon.prometheus_url, 5.0, ToolBackend(name="prometheus"), book=book
        )
        queries = "broken pool_pending request_rate"
        mixed = tool.run(QueryPrometheusParams(queries=queries, service=SERVICE), ctx)
        alone = tool.run(QueryPrometheusParams(queries="broken", service=SERVICE), ctx)
    assert mixed.success, mixed.error_message
    assert [q["id"] for q in mixed.output["queries"]] == ["pool_pending"]
    # the service exports no request counter: the real listing says so, no query runs
    assert mixed.output["absent"] == ["request_rate"]
    assert mixed.output["query_errors"][0].startswith("broken: prometheus: HTTP 400")
    assert not alone.success and "HTTP 400" in (alone.error_message or "")


def _versions_openmetrics(end: float) -> str:
    """Two versions of one service; only the new one answers 500, one in four requests."""
    series = {
        'version="1.4.0",code="200"': 6.0,
        'version="1.5.0",code="200"': 3.0,
        'version="1.5.0",code="500"': 1.0,
    }
    counters = {f"{LABELS},{labels}": _counting(per_s) for labels, per_s in series.items()}
    return document(family("http_requests", "counter", counters, end))


def _counting(per_s: float) -> Callable[[int], float]:
    """A counter rising ``per_s`` a second from two hours before the end."""
    return lambda m: per_s * 60 * (m + 120)


def test_the_error_ratio_by_version_gives_a_clean_version_zero(tmp_path: Path) -> None:
    """Each version's 5xx share of its own requests; a version without 5xx shows 0, not nothing."""
    now = datetime.now(UTC).replace(microsecond=0)
    data = backfill(_versions_openmetrics(now.timestamp()), tmp_path / "prometheus")
    query = catalogue().queries["error_ratio_by_version"]
    promql = render(query, f'namespace="{NAMESPACE}",service="{SERVICE}"')
    with running_monitoring(tmp_path / "monitoring", "http://127.0.0.1:9/", data_dir=data) as mon:
        reply = mon.client.get(
            f"{mon.prometheus_url}/api/v1/query",
            params={"query": promql, "time": f"{now.timestamp() - 60:.0f}"},
        )
    result = reply.json()["data"]["result"]
    ratios = {r["metric"].get("version"): round(float(r["value"][1]), 3) for r in result}
    assert ratios == {"1.4.0": 0.0, "1.5.0": 0.25}


def _two_request_families(end: float) -> str:
    """Request counters of one service: one holds only its 500s (0.5/s), one all of gRPC's
    (8/s), one a framework's own (20/s, by its name only); and a client's (50/s)."""
    families = {
        "http_requests": ('code="500"', 0.5),
        "grpc_server_handled": ('grpc_code="OK"', 8.0),
        "shopfront_requests": ('code="200"', 20.0),
        "shopfront_client_requests": ('code="200"', 50.0),
    }
    return document(
        *(
            family(name, "counter", {f"{LABELS},{extra}": _counting(per_s)}, end)
            for name, (extra, per_s) in families.items()
        )
    )


def test_the_request_rate_and_error_ratio_are_the_busiest_familys(tmp_path: Path) -> None:
    """A family holding only some requests (its 500s) never stands for all of them: the
    request rate is the largest server family's (a framework's counter found by its name,
    not a client's), the error ratio that of the known family with most requests (all of
    gRPC's succeed), not the first family's 100 %."""
    now = datetime.now(UTC).replace(microsecond=0)
    data = backfill(_two_request_families(now.timestamp()), tmp_path / "prometheus")
    found: dict[str, float] = {}
    with running_monitoring(tmp_path / "monitoring", "http://127.0.0.1:9/", data_dir=data) as mon:
        for query in ("request_rate", "error_ratio"):
            promql = render(catalogue().queries[query], f'namespace="{NAMESPACE}"')
            reply = mon.client.get(
                f"{mon.prometheus_url}/api/v1/query",
                params={"query": promql, "time": f"{now.timestamp() - 60:.0f}"},
            )
            [result] = reply.json()["data"]["result"]
            assert result["metric"] == {}, "the alternative label is summed away"
            found[query] = round(float(result["value"][1]), 3)
    # a family found by its name is rated over a subquery, which reads these once-a-minute
    # samples a little low: 20/s is about 17/s, never the 8/s, 50/s or 70/s of the others
    assert 15.0 < found["request_rate"] <= 20.0 and found["error_ratio"] == 0.0


RULES = f"""groups:
- name: ledger
  rules:
  - alert: LedgerOutboxBacklog
    expr: max by (namespace, service) (ledger_outbox_pending{{{LABELS}}}) > 1000
    labels:
      severity: page
"""


def test_the_alerts_own_expression_is_read_from_the_real_rule(tmp_path: Path) -> None:
    """The rule's left-hand side over the window, from Prometheus's own /api/v1/rules."""
    now = datetime.now(UTC).replace(microsecond=0)
    data = backfill(_openmetrics(now.timestamp()), tmp_path / "prometheus")
    alert = Alert(
        status="firing",
        labels={
            "alertname": "LedgerOutboxBacklog",
            "service": SERVICE,
            "namespace": NAMESPACE,
            "severity": "page",
        },
        startsAt=(now - timedelta(minutes=2)).isoformat(),
    )
    ctx = RunContext(run_id="r", alerts=(alert,), requested_at=now)
    monitoring = running_monitoring(
        tmp_path / "monitoring", "http://127.0.0.1:9/", RULES, data_dir=data
    )
    with monitoring as mon:
        tool = QueryPrometheusTool(mon.prometheus_url, 5.0, ToolBackend(name="prometheus"))
        outcome = tool.run(QueryPrometheusParams(queries="pool_pending", service=SERVICE), ctx)
    assert outcome.success, outcome.error_message
    [own] = [s for s in outcome.output["series"] if s["query"] == "alert"]
    assert own["labels"] == {"namespace": NAMESPACE, "service": SERVICE}
    assert own["worse"] == "rose" and own["facts"]["direction"] == "rose"
    assert own["what"] == "the expression of alert LedgerOutboxBacklog"
    assert outcome.output["queries"][0]["id"] == "alert"
