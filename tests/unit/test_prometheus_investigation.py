"""query_prometheus: series facts, scoping, units, bounds, diagnosis rules, claim wording."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest

from services.executor.claim_templates import templates
from services.executor.claims import with_findings
from services.executor.diagnosis import evaluate
from services.executor.series_claims import wording
from services.executor.tools.base import RunContext
from services.executor.tools.prometheus_scope import QueryPrometheusParams, scope_labels
from services.executor.tools.promql import Query, alternatives, catalogue, matchers, render
from services.executor.tools.query_prometheus import MAX_QUERIES, QueryPrometheusTool
from services.executor.tools.series_facts import change_point, series_facts
from services.executor.tools.series_text import series_text
from services.executor.tools.units import format_quantity, plain
from services.verifier.structure import check_claim
from tests.support.series_items import END, ONSET, START, STEP, item, points, series_of
from tracebound.events import Alert, ToolBackend


def test_a_step_change_is_dated_and_its_direction_read() -> None:
    f = series_facts(
        points(lambda i: 5.0 if i < 150 else 40.0), start=START, end=END, onset=ONSET, step=STEP
    )
    assert f is not None and f.direction == "rose"
    assert f.change_began == START + 150 * STEP
    assert f.at_onset == 40.0 and f.hour_before == 5.0


def test_a_level_states_its_rate_per_minute_and_when_it_runs_out() -> None:
    minutes = STEP / 60
    free = item(lambda i: 0.45 - max(0, i - 120) * 0.0025, "ratio", "fs_free_ratio")["facts"]
    per_min = 0.25 / minutes
    assert free["trend"] == "shrinking" and free["per_minute"] == f"{per_min:.3g}%/min"
    left = float(free["at_onset"].rstrip("%"))
    assert free["empty_in"] == f"{round(left / per_min)} min"
    saw = item(lambda i: 2e8 + (i % 80) * 8e6, "bytes", "memory_working_set")["facts"]
    assert saw["trend"] == "growing" and saw["empty_in"] is None
    flat = item(lambda i: 5e8 + (i % 2) * 1e6, "bytes", "memory_working_set")["facts"]
    assert flat["trend"] is None
    lag = item(lambda i: 100.0 + i, "/s", "request_rate")["facts"]
    assert lag["trend"] is None  # a rate's change per minute is no level's


def test_a_change_older_than_the_hour_is_read_across_its_change_point() -> None:
    # onset at sample 238; the step at sample 96 lies 71 minutes before it
    f = series_facts(
        points(lambda i: 45.0 if i < 96 else 2650.0), start=START, end=END, onset=ONSET, step=STEP
    )
    assert f is not None and f.hour_before == f.at_onset == 2650.0
    assert (f.direction, f.change_began) == ("rose", START + 96 * STEP)
    warm_up = series_facts(
        points(lambda i: 0.0 if i < 10 else 5.0), start=START, end=END, onset=ONSET, step=STEP
    )
    assert warm_up is not None and (warm_up.direction, warm_up.change_began) == ("steady", None)


def test_noise_is_no_change() -> None:
    rng = random.Random(3)
    values = [100 + rng.random() * 4 for _ in range(240)]
    assert change_point(values) is None


def test_a_series_that_starts_inside_the_window_says_when() -> None:
    pts = [(t, v) for t, v in points(lambda i: 1.0) if t >= START + 3600]
    f = series_facts(pts, start=START, end=END, onset=ONSET, step=STEP)
    assert f is not None and f.first_seen == START + 3600 and f.hour_before is None


@pytest.mark.parametrize(
    ("value", "unit", "text"),
    [
        (536870912, "bytes", "512 MiB"),
        (1.5 * 1024**3, "bytes", "1.5 GiB"),
        (0.1234, "ratio", "12.3%"),
        (0.35, "seconds", "350ms"),
        (2.5, "seconds", "2.5s"),
        (1.2e9, "count", "1200000000"),
        (0.000123, "count", "0.000123"),
        (12.5, "/s", "12.5/s"),
    ],
)
def test_quantities_print_in_plain_digits_and_the_unit_people_read(
    value: float, unit: str, text: str
) -> None:
    assert format_quantity(value, unit) == text
    assert "e+" not in plain(value) and "e-" not in plain(value)


def test_scopes_use_the_alert_labels_and_never_run_unscoped() -> None:
    # a pod named after the service may be a sibling workload's: one labelled so is not
    assert matchers("namespace,pod~service", {"namespace": "ns", "service": "a.b"}) == (
        'namespace="ns",pod=~"a\\\\.b(-.*)?",service!~"a\\\\.b-.+"'
    )
    assert matchers("namespace,deployment=service", {"service": "api"}) is None
    # without its namespace, a workload's name still keeps to the alert's namespace
    labels = {"namespace": "shop", "service": "api"}
    assert matchers("service", labels) == 'namespace=~"shop|",service="api"'
    assert matchers("consumergroup~service", labels) == (
        'consumergroup=~"api(-.*)?",service!~"api-.+"'
    )
    book = catalogue()
    assert "restarts" in book.expand("workload")
    with pytest.raises(KeyError):
        book.expand("up")  # free PromQL is not a query id


def test_scope_labels_come_from_the_runs_matching_alerts() -> None:
    alerts = (
        Alert(
            status="firing",
            labels={"alertname": "A", "service": "api", "namespace": "ns", "pod": "api-1"},
            startsAt="2026-12-05T14:50:00Z",
        ),
        Alert(status="firing", labels={"alertname": "B", "service": "db", "namespace": "ns2"}),
    )
    labels, onset = scope_labels(alerts, QueryPrometheusParams(queries="workload", service="api"))
    assert labels == {"namespace": "ns", "service": "api", "pod": "api-1"}
    assert onset.startswith("2026-12-05T14:50")


def test_oom_rule_holds_on_its_premises_and_not_on_a_change_after_the_alert() -> None:
    oom = item(lambda i: 1, "presence", "last_terminated_reason", reason="OOMKilled", pod="x-1")
    restarts = item(lambda i: 0 if i < 200 else 3, "count", "restarts", pod="x-1")
    late = item(lambda i: 0 if i < 239 else 3, "count", "restarts", pod="x-1")
    [finding] = [f for f in evaluate(series_of([oom, restarts])) if f.rule.id == "oom-killed"]
    assert [s.query for s in finding.premises] == ["last_terminated_reason", "restarts"]
    assert not [f for f in evaluate(series_of([oom, late])) if f.rule.id == "oom-killed"]


def test_a_change_long_before_the_alert_is_no_premise() -> None:
    early = item(lambda i: 1 if i < 20 else 9, "count", "pool_pending", pool="p")
    active = item(lambda i: 20, "count", "pool_active", pool="p")
    ceiling = item(lambda i: 20, "count", "pool_max", pool="p")
    assert not evaluate(series_of([early, active, ceiling]))
    recent = item(lambda i: 0 if i < 200 else 9, "count", "pool_pending", pool="p")
    rules = [f.rule.id for f in evaluate(series_of([recent, active, ceiling]))]
    assert rules == ["pool-exhausted", "pool-callers-waiting"]
    # without a pool maximum, callers waiting while the idle connections ran out say it
    idle = item(lambda i: 3 if i < 199 else 0, "count", "pool_idle", pool="p")
    [finding] = evaluate(series_of([recent, idle]))
    assert finding.rule.id == "pool-callers-waiting" and len(finding.premises) == 2


def test_lag_with_a_falling_consumption_rate_is_a_slow_consumer_but_only_circumstantial() -> None:
    lag = item(lambda i: 100 if i < 200 else 100 + (i - 200) * 2000, "count", "consumer_lag")
    consumed = item(lambda i: 1300 if i < 200 else 830, "/s", "consume_rate")
    steady = item(lambda i: 1300, "/s", "consume_rate")
    [finding] = evaluate(series_of([lag, consumed]))
    assert (finding.rule.id, finding.rule.circumstantial) == ("consumer-fell-behind", True)
    assert not evaluate(series_of([lag, steady]))


def test_a_largest_query_takes_the_largest_alternative_at_each_step() -> None:
    query = catalogue().queries["request_rate"]
    assert query.largest
    rendered = render(query, 'service="gw"')
    legs = alternatives(query.promql)
    assert rendered.startswith("max (label_replace(") and rendered.count(" or ") == len(legs) - 1
    assert alternatives('sum (a{x=" or "}) or max by (p) (b or c) or d') == [
        'sum (a{x=" or "})',
        "max by (p) (b or c)",
        "d",
    ]


def test_a_busiest_ratio_reads_the_alternative_with_the_largest_denominator() -> None:
    query = catalogue().queries["error_ratio"]
    assert query.busiest and not query.largest
    rendered = render(query, 'service="gw"')
    legs = alternatives(query.promql)
    assert rendered.startswith("max without (alternative) ((label_replace(")
    assert (
        ") and on (alternative) topk (1, label_replace(sum (rate(http_requests_total{" in rendered
    )
    assert (
        rendered.count('"alternative", "1", "", "")') == 2 and f'"{len(legs)}", "", "")' in rendered
    )
    with pytest.raises(ValueError, match="ratio in every alternative"):
        Query(
            what="x",
            promql="sum(a{SCOPE}) or sum(b{SCOPE}) / sum(c{SCOPE})",
            scope="app",
            unit="ratio",
            busiest=True,
        )


def test_deploy_regression_needs_the_error_rise_on_the_new_version() -> None:
    new = item(lambda i: 1, "presence", "versions", version="v2")
    new["facts"]["values"]["first_seen"] = START + 170 * STEP
    old_errors = item(
        lambda i: 0.01 if i < 180 else 0.2, "ratio", "error_ratio_by_version", version="v1"
    )
    new_errors = item(
        lambda i: 0.01 if i < 180 else 0.2, "ratio", "error_ratio_by_version", version="v2"
    )
    assert not evaluate(series_of([new, old_errors]))
    [finding] = evaluate(series_of([new, new_errors]))
    assert finding.rule.id == "deploy-regression"


def test_logs_fill_the_disk_only_when_the_log_rate_rose_with_the_fall() -> None:
    free = item(
        lambda i: 0.43 - max(0, i - 100) * 0.0025, "ratio", "fs_free_ratio", mountpoint="/l"
    )
    debug = item(lambda i: 0 if i < 100 else 2600, "/s", "log_events_rate", level="debug")
    info = item(lambda i: 45, "/s", "log_events_rate", level="info")
    reloads = item(lambda i: 3 if i < 99 else 4, "count", "config_reloads")
    rules = [f.rule.id for f in evaluate(series_of([free, debug, info, reloads]))]
    assert rules[0] == "logs-fill-disk" and "disk-filling" in rules
    [finding] = [f for f in evaluate(series_of([free, debug, reloads])) if f.rule.id == rules[0]]
    assert [s.query for s in finding.premises] == [
        "fs_free_ratio",
        "log_events_rate",
        "config_reloads",
    ]
    assert [f.rule.id for f in evaluate(series_of([free, info]))] == ["disk-filling"]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_series_claims_pass_the_verifier_and_their_edits_do_not(lang: str) -> None:
    t = templates()["series"]
    cases = [
        item(lambda i: 0 if i < 200 else 4, "count", "restarts", pod="ledger-1"),
        item(lambda i: 3.2e8 + i * 1.5e6, "bytes", "memory_working_set", pod="ledger-1"),
        item(lambda i: 0.004 if i < 160 else 0.12, "ratio", "error_ratio_by_version", version="v9"),
        item(lambda i: 120.0, "/s", "request_rate"),
        item(lambda i: 1, "presence", "last_terminated_reason", reason="OOMKilled"),
        # rose long before the last hour, then eased: worded from the window, not the hour
        item(lambda i: 0.2 if i < 40 else (1.16 if i < 200 else 1.04), "cores", "cpu_usage"),
        # free space falling fast: its rate per minute and when it runs out
        item(lambda i: 0.45 - max(0, i - 120) * 0.0025, "ratio", "fs_free_ratio", mountpoint="/"),
        # a saw-tooth climb: a restart's drop does not hide the growth per minute
        item(lambda i: 2e8 + (i % 80) * 8e6, "bytes", "memory_working_set", pod="p"),
        # labels whose values are numbers, listed after the values in the claim
        item(lambda i: 9 if i < 200 else 0, "count", "sweep", id="-1372915583", partition="3"),
    ]
    for case in cases:
        ref = series_text(case)
        claim = wording(case, lang, t)
        results = check_claim(claim, [ref])
        assert all(r.found and not r.conflict for r in results), (claim, ref, results)
    changed = cases[0]
    claim = wording(changed, lang, t)
    for old, new in (("rose", "fell"), ("上升", "下降"), ("ledger-1", "ledger-2")):
        if old in claim:
            edited = check_claim(claim.replace(old, new), [series_text(changed)])
            assert any(r.conflict or not r.found for r in edited), (old, new)


def test_a_change_states_its_ratio_and_a_wrong_ratio_does_not_pass() -> None:
    t = templates()["series"]
    p99 = item(lambda i: 0.229 if i < 200 else 0.542, "seconds", "latency_p99")
    assert p99["facts"]["ratio"] == "2.4x"
    ref = series_text(p99)
    assert "from 229ms one hour before (2.4x)" in ref
    for lang in ("en", "zh"):
        claim = wording(p99, lang, t)
        assert "2.4x" in claim
        assert all(r.found and not r.conflict for r in check_claim(claim, [ref])), claim
        edited = check_claim(claim.replace("2.4x", "3.4x"), [ref])
        assert any(r.conflict or not r.found for r in edited), lang
    for said, ok in (
        ("2.4 times", False),  # "times" also counts events: only x, ×, fold and 倍 are factors
        ("2.4-fold", True),
        ("3 times", False),
        ("的2.4倍", True),
    ):
        results = check_claim(f"p99 latency rose {said}", [ref])
        assert all(r.found and not r.conflict for r in results) is ok, said
    # a plain number is never read as the ratio: "3 restarts" is not "(3x)"
    restarts = series_text(item(lambda i: 2 if i < 200 else 6, "count", "restarts", pod="p"))
    assert "(3x)" in restarts
    for said in ("The pod restarted 3 times.", "重启次数为3次", "restarts rose to 3"):
        assert not all(r.found and not r.conflict for r in check_claim(said, [restarts])), said
    # a small change, one from zero, or a huge one states no ratio
    small = item(lambda i: 100.0 if i < 200 else 120.0, "/s", "request_rate")
    from_zero = item(lambda i: 0 if i < 200 else 4, "count", "restarts")
    huge = item(lambda i: 0.0006 if i < 200 else 2.8, "seconds", "pool_acquire_time")
    assert [x["facts"]["ratio"] for x in (small, from_zero, huge)] == [None, None, None]


def test_a_key_stated_with_another_value_is_contradicted() -> None:
    ref = "last termination reason for container=app, reason=OOMKilled: present"
    [pair] = [r for r in check_claim("reason=Error for container=app", [ref]) if r.kind == "pair"]
    assert pair.conflict


def test_a_fraction_is_one_fact() -> None:
    ref = "pool stats active=50/50, idle=0, waiting=23"
    assert any(r.kind == "fraction" for r in check_claim("pool 50/00 active", [ref]))
    assert not [r for r in check_claim("pool 50/50 active", [ref]) if not r.found]
    loose = "1 available replicas of 9 desired"
    assert not [r for r in check_claim("short of replicas (1/9 available)", [loose]) if not r.found]


def test_a_number_in_the_items_own_words_keeps_its_role() -> None:
    message = '{"msg":"circuit breaker CLOSED -> OPEN (failure ratio 0.54 over 200 calls)"}'
    ref = f"2026-12-05 17:08:22 WARN fare-quote {message}"
    claim = f'At 2026-12-05 17:08:22, fare-quote logged WARN: "{message}"'
    assert all(r.found and not r.conflict for r in check_claim(claim, [ref]))
    edited = check_claim(claim.replace("0.54", "0.64"), [ref])
    assert any(r.conflict for r in edited)


def test_llm_output_gains_the_rules_findings_once() -> None:
    structured = {"claims": [{"claim_id": "claim-1", "claim_text": "x"}], "hypotheses": ["h"]}
    premise = {"claim_type": "observation", "claim_text": "p", "evidence_bindings": []}
    merged = with_findings(structured, [premise], ["cause"])
    assert [c["claim_text"] for c in merged["claims"]] == ["x", "p"]
    assert merged["claims"][1]["claim_id"] == "claim-2"
    assert merged["hypotheses"] == ["cause", "h"]
    assert with_findings(merged, [premise], ["cause"])["claims"] == merged["claims"]


def test_no_query_starts_after_the_time_budget() -> None:
    tool = QueryPrometheusTool(
        "http://127.0.0.1:9", 1.0, ToolBackend(name="prometheus"), budget_s=-1.0
    )
    alert = Alert(status="firing", labels={"alertname": "A", "service": "api"})
    params = QueryPrometheusParams(queries="workload", service="api")
    outcome = tool.run(params, RunContext(run_id="r", alerts=(alert,)))
    assert not outcome.success and "time budget" in (outcome.error_message or "")
    assert outcome.output["not_run"][0] == "restarts"


def test_without_a_prometheus_the_call_fails_naming_the_setting() -> None:
    tool = QueryPrometheusTool("", 1.0, ToolBackend(name="none"))
    outcome = tool.run(QueryPrometheusParams(queries="workload"), RunContext(run_id="r"))
    assert not outcome.success and "TRACEBOUND_TOOLS_PROMETHEUS_URL" in (
        outcome.error_message or ""
    )


def test_the_description_names_the_sets_which_cover_every_query() -> None:
    book = catalogue()
    description = QueryPrometheusTool("", 1.0, ToolBackend(name="none")).description
    assert all(name in description for name in book.sets)
    assert "cpu_throttling" not in description, "single ids are left to the skills"
    assert set(book.queries) == {q for ids in book.sets.values() for q in ids}


def test_every_set_runs_whole_within_the_query_cap() -> None:
    book = catalogue()
    assert all(len(book.expand(name)) <= MAX_QUERIES for name in book.sets)


def test_a_breakdown_without_its_label_is_not_stated_twice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``latency_p99_by_version`` of a service without versions repeats ``latency_p99``."""
    tool = QueryPrometheusTool("http://127.0.0.1:9", 1.0, ToolBackend(name="prometheus"))
    values = [[t, "0.2"] for t in range(int(START), int(END), STEP)]

    def answer(promql: str, *_: object) -> list[dict[str, object]]:
        if "version" not in promql:
            return [{"metric": {}, "values": values}]
        return [
            {"metric": {"version": "2.1.0"}, "values": values},
            {"metric": {}, "values": values},
        ]

    monkeypatch.setattr(tool, "_range", answer)
    onset = datetime.fromtimestamp(ONSET, UTC).isoformat()
    alert = Alert(status="firing", labels={"alertname": "A", "service": "api"}, startsAt=onset)
    params = QueryPrometheusParams(queries="latency_p99 latency_p99_by_version", service="api")
    ctx = RunContext(run_id="r", alerts=(alert,), requested_at=datetime.fromtimestamp(END, UTC))
    outcome = tool.run(params, ctx)
    labels = [(s["query"], s["labels"]) for s in outcome.output["series"]]
    assert labels == [("latency_p99", {}), ("latency_p99_by_version", {"version": "2.1.0"})]
