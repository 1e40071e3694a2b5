"""The call about the dependency failing calls go to: when it is made, its scope, and
how rules read its series apart from the alert's own."""

from __future__ import annotations

from typing import Any

from services.executor.dependency_hop import dependency_call, dependency_named
from services.executor.diagnosis import evaluate
from services.executor.follow_ups import follow_up_calls
from services.executor.onset_logs import trace_findings, trace_series
from services.executor.series_claims import SeriesRef, diagnose
from services.executor.tools.prometheus_scope import QueryPrometheusParams, scope_labels
from tests.support.evidence_events import answered_invocation
from tests.support.series_items import item, series_of
from tracebound.events import Alert, PlannedCall, ToolInvocation

FAILING = 200  # the sample where the calls to the upstream start to fail
PLANNED = {"queries": "investigation", "service": "dispatch", "alert_name": "Dispatch5xx"}


def _failing(upstream: str) -> dict[str, Any]:
    return item(
        lambda i: 0.01 if i < FAILING else 40.0,
        "/s",
        "client_errors",
        envoy_cluster_name=upstream,
        dependency=upstream,
    )


def _invocation(inv_id: int, params: dict[str, Any], items: list[dict[str, Any]]) -> ToolInvocation:
    paths = [f"$.series[{i}]" for i in range(len(items))]
    return answered_invocation(inv_id, "query_prometheus", params, {"series": items}, paths)


def _hop(trace: list[ToolInvocation]) -> PlannedCall | None:
    """The dependency call of a planned metrics call over ``trace``."""
    return dependency_call(trace, _plan(), trace_series(trace), trace_findings(trace))


def _plan() -> list[PlannedCall]:
    return [PlannedCall(tool="query_prometheus", params=PLANNED, purpose="")]


def _of(dependency: str, it: dict[str, Any]) -> dict[str, Any]:
    return {**it, "dependency": dependency, "what": f"{it['what']} of {dependency}"}


def _crashing(dependency: str) -> list[dict[str, Any]]:
    restarts = item(lambda i: 0 if i < FAILING else 4, "count", "restarts", pod="geo-eta-1")
    reason = item(
        lambda _: 1,
        "count",
        "last_terminated_reason",
        since=FAILING,
        pod="geo-eta-1",
        reason="OOMKilled",
    )
    return [_of(dependency, restarts), _of(dependency, reason)]


def test_the_dependency_a_failure_rule_names_is_read_once() -> None:
    trace = [_invocation(1, PLANNED, [_failing("geo-eta")])]
    assert dependency_named(trace_findings(trace)) == "geo-eta"
    call = _hop(trace)
    assert call is not None and call.params == {
        **PLANNED,
        "queries": "dependency_state",
        "dependency": "geo-eta",
    }
    assert follow_up_calls(trace, _plan()) == [call]
    asked = [*trace, _invocation(2, dict(call.params), _crashing("geo-eta"))]
    assert _hop(asked) is None, "one call per round"


def test_a_label_that_is_no_plain_name_is_not_followed() -> None:
    trace = [_invocation(1, PLANNED, [_failing('geo"} or vector(1) #')])]
    assert dependency_named(trace_findings(trace)) is None
    assert _hop(trace) is None


def test_the_scope_is_the_dependency_in_the_alerts_namespace() -> None:
    alert = Alert(
        status="firing",
        labels={
            "alertname": "Dispatch5xx",
            "service": "dispatch",
            "namespace": "logistics",
            "pod": "dispatch-1",
        },
        startsAt="2026-12-05T14:59:00Z",
    )
    params = QueryPrometheusParams(
        queries="dependency_state", service="dispatch", dependency="geo-eta"
    )
    labels, onset = scope_labels([alert], params)
    assert labels == {"namespace": "logistics", "service": "geo-eta"}
    assert onset.startswith("2026-12-05T14:59:00")


def test_a_dependencys_series_is_read_only_by_premises_about_a_dependency() -> None:
    own = [_failing("geo-eta")]
    findings = evaluate(series_of([*own, *_crashing("geo-eta")]))
    rules = [f.rule.id for f in findings]
    assert rules[0] == "dependency-crashing"
    assert "oom-killed" not in rules and "memory-leak-oom" not in rules
    refs = [SeriesRef({}, s) for s in series_of([*own, *_crashing("geo-eta")])]
    cause = dict(diagnose(refs, "en").causes)["dependency-crashing"]
    assert "geo-eta" in cause and "OOMKilled" in cause


def test_a_restart_long_before_the_alert_blames_no_dependency() -> None:
    restarts = item(lambda i: 0 if i < 5 else 1, "count", "restarts", pod="geo-eta-1")
    rules = [
        f.rule.id for f in evaluate(series_of([_failing("geo-eta"), _of("geo-eta", restarts)]))
    ]
    assert "dependency-crashing" not in rules and "dependency-failing" in rules


def test_only_an_outgoing_call_names_the_dependency_followed() -> None:
    category = item(
        lambda i: 0.01 if i < FAILING else 0.2, "/s", "dependency_errors", dependency="db"
    )
    trace = [_invocation(1, PLANNED, [category, _failing("payments")])]
    assert dependency_named(trace_findings(trace)) == "payments"
    assert dependency_named(trace_findings([_invocation(1, PLANNED, [category])])) is None


def test_without_the_alerts_namespace_no_dependency_is_queried() -> None:
    alert = Alert(status="firing", labels={"alertname": "Dispatch5xx", "service": "dispatch"})
    params = QueryPrometheusParams(
        queries="dependency_state", service="dispatch", dependency="geo-eta"
    )
    assert scope_labels([alert], params)[0] == {}


def test_an_envoy_cluster_is_followed_by_its_host() -> None:
    trace = [_invocation(1, PLANNED, [_failing("outbound|8080||geo-eta.maps.svc.cluster.local")])]
    assert dependency_named(trace_findings(trace)) == "geo-eta.maps.svc.cluster.local"


def test_a_proxys_surge_reads_its_busiest_backends_capacity() -> None:
    surge = [
        item(lambda i: 100.0 if i < FAILING else 600.0, "/s", "request_rate"),
        item(lambda i: 0.1 if i < FAILING else 0.6, "cores", "cpu_usage", pod="edge-1"),
    ]
    rising = lambda i: 90.0 if i < FAILING else 540.0  # noqa: E731
    busy = item(rising, "/s", "upstream_requests", dependency="storefront_web")
    quiet = item(lambda i: 10.0, "/s", "upstream_requests", dependency="recs_backend")
    backends = [busy, quiet]
    trace = [_invocation(1, PLANNED, [*surge, *backends])]
    call = _hop(trace)
    assert call is not None and call.params["queries"] == "backend_state"
    assert call.params["dependency"] == "storefront_web"
    calm = [_invocation(1, PLANNED, [item(lambda i: 100.0, "/s", "request_rate"), *backends])]
    assert _hop(calm) is None, "no surge, no hop"
