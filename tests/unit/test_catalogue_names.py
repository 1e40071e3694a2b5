"""The catalogue's name patterns: which metric names a query reads, and which it never does."""

from __future__ import annotations

import re

from services.executor.tools.promql import catalogue


def test_a_server_request_counter_is_read_by_its_name() -> None:
    promql = catalogue().queries["request_rate"].promql
    names = [m for m in re.findall(r'__name__=~\\?"([^"\\]+)', promql)]
    server = next(n for n in names if "grpc|rpc|api" in n)
    pattern = re.compile(f"^(?:{server})$")
    for name in (
        "http_server_requests_total",
        "wildfly_undertow_request_count_total",
        "tomcat_requestcount_total",
        "myapp_api_calls_handled_total",
    ):
        assert pattern.match(name), name
    assert not pattern.match("myapp_request_duration_seconds_count")


def _selectors(query: str) -> list[tuple[str, str, str]]:
    """Each ``(name pattern, excluded names, rest)`` of the query's name-pattern selectors."""
    promql = catalogue().queries[query].promql
    found = re.findall(r'\{__name__=~"([^"]+)"(?:, __name__!~"([^"]+)")?([^}]*)\}', promql)
    return [(a, b, c) for a, b, c in found]


def test_a_services_own_request_counter_without_a_status_counts_but_never_a_clients() -> None:
    [(named, excluded, _)] = [
        s
        for s in _selectors("request_rate")
        if s[0] == "(.+_)?requests_total" and s[2] == ", SCOPE"
    ]
    for name, counted in (
        ("unit_requests_total", True),
        ("myapp_client_requests_total", False),
        ("istio_requests_total", False),
        ("checkout_failed_requests_total", False),
    ):
        read = re.fullmatch(named, name) is not None and re.fullmatch(excluded, name) is None
        assert read == counted, name


def test_an_outgoing_call_counter_with_a_failed_result_names_its_upstream() -> None:
    branches = [s for s in _selectors("client_errors") if "upstream|outbound" in s[0]]
    assert {re.search(r"(\w+)=~", rest)[1] for _, _, rest in branches} == {  # type: ignore[index]
        "result",
        "outcome",
        "status",
    }
    name, _, rest = branches[0]
    assert re.fullmatch(name, "quotes_upstream_requests_total")
    ok = re.search(r'!~"\(\?i\)([^"]+)"', rest)
    assert ok is not None
    for value, failed in (("ok", False), ("200", False), ("no_healthy_instance", True)):
        assert (re.fullmatch(ok[1], value, re.IGNORECASE) is None) == failed, value
