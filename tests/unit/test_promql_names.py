"""A query whose metrics the scope does not export is not run; the listing is made once."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from services.executor.tools.base import RunContext, ToolBackendError
from services.executor.tools.prometheus_scope import QueryPrometheusParams
from services.executor.tools.promql import catalogue
from services.executor.tools.promql_names import Listings, listing_params, selects
from services.executor.tools.query_prometheus import QueryPrometheusTool
from services.executor.tools.series_items import Span
from tests.support.series_items import END, ONSET, START, STEP
from tracebound.events import Alert, ToolBackend


def test_a_query_selects_its_names_and_its_name_patterns() -> None:
    chosen = selects('sum(rate(a_total{SCOPE}[5m])) or max({__name__=~"(.+_)?b_\\\\w+", SCOPE})')
    assert chosen.names == {"a_total"}
    assert chosen.any_of({"a_total"}) and chosen.any_of({"svc_b_x"})
    assert not chosen.any_of({"c_total", "b"})
    assert selects("vector(1)").any_of(set()), "a template naming nothing is run"


def test_the_listing_spans_the_window() -> None:
    params = listing_params('service="api"', 10.0, 20.0)
    assert params == {"match[]": '{service="api"}', "start": "10.000", "end": "20.000"}


class _Listed(QueryPrometheusTool):
    """A Prometheus that exports ``names`` and answers every range query with one series."""

    def __init__(self, names: frozenset[str] | None) -> None:
        super().__init__("http://127.0.0.1:9", 1.0, ToolBackend(name="prometheus"))
        self.names = names
        self.ranges: list[str] = []
        self.listed = 0

    def _listing(self, selector: str, span: Span, listings: Listings) -> frozenset[str] | None:
        if selector not in listings:
            self.listed += 1
            listings[selector] = self.names
        return listings[selector]

    def _range(self, promql: str, start: datetime, end: datetime, step: int) -> list[Any]:
        self.ranges.append(promql)
        values = [[t, "1"] for t in range(int(START), int(END), STEP)]
        return [{"metric": {}, "values": values}]


def _run(tool: QueryPrometheusTool, queries: str) -> Any:
    onset = datetime.fromtimestamp(ONSET, UTC).isoformat()
    alert = Alert(status="firing", labels={"alertname": "A", "service": "api"}, startsAt=onset)
    ctx = RunContext(run_id="r", alerts=(alert,), requested_at=datetime.fromtimestamp(END, UTC))
    return tool.run(QueryPrometheusParams(queries=queries, service="api"), ctx)


def test_only_queries_whose_metrics_are_exported_run() -> None:
    book = catalogue()
    ids = book.expand("traffic")
    exported = next(iter(selects(book.queries[ids[0]].promql).names))
    tool = _Listed(frozenset({exported}))
    outcome = _run(tool, "traffic")
    ran = [q["id"] for q in outcome.output["queries"]]
    assert ids[0] in ran
    assert all(selects(book.queries[q].promql).any_of({exported}) for q in ran)
    assert set(ran) | set(outcome.output["absent"]) == set(ids)
    assert len(tool.ranges) == len(ran), "no range query for an absent metric"
    assert tool.listed <= len(book.scopes), "one listing per selector"


def test_nothing_exported_is_no_series_not_a_failure() -> None:
    outcome = _run(_Listed(frozenset({"other_metric"})), "traffic")
    assert outcome.success and not outcome.output["series"]
    assert outcome.output["absent"] and not outcome.output["queries"]


def test_a_failed_listing_runs_every_query() -> None:
    tool = _Listed(None)
    outcome = _run(tool, "traffic")
    assert [q["id"] for q in outcome.output["queries"]] == list(catalogue().expand("traffic"))
    assert "absent" not in outcome.output


def test_a_listing_refused_by_the_server_counts_as_failed() -> None:
    tool = QueryPrometheusTool("http://127.0.0.1:9", 1.0, ToolBackend(name="prometheus"))
    span = (datetime.fromtimestamp(START, UTC), datetime.fromtimestamp(END, UTC), STEP)
    listings: Listings = {}
    assert tool._listing('service="api"', span, listings) is None
    assert listings == {'service="api"': None}
    try:
        tool._names("app", {"service": "api"}, span, listings)
    except ToolBackendError as exc:
        assert "could not be listed" in str(exc)
    else:
        raise AssertionError("a sweep without a listing must say so")
