"""The incident suite's alerts fire at minute 0, and its scoring (pure, no services).

The held-out test split is loaded for validation only; assertions about it are
computed first and asserted as booleans, so a failure names no detail of it.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from evals.incidents import render
from evals.incidents.model import Incident, Series
from evals.incidents.score import _compiled, score, shown_in
from tests.support.incident_splits import by_id

# --- the alerts fire at minute 0 (dev split, evaluated by hand) -------------------------


def _series(inc: Incident, name: str, **labels: str) -> list[Series]:
    return [
        s
        for s in inc.series
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
    ]


def _rate(series: list[Series], window: float, pick: Callable[[str], bool] = bool) -> float:
    """Per-second increase over the last ``window`` minutes of the samples ``pick`` keeps."""
    total = 0.0
    for s in series:
        now = {(n, str(lab)): v for n, lab, v in render.samples_at(s, 0.0) if pick(n)}
        then = {(n, str(lab)): v for n, lab, v in render.samples_at(s, -window) if pick(n)}
        total += sum(now[k] - then[k] for k in now)
    return total / (window * 60)


def _quantile(q: float, s: Series, window: float) -> float:
    now = render.samples_at(s, 0.0)
    then = render.samples_at(s, -window)
    bounds = [*(s.buckets or ()), math.inf]
    counts = [a[2] - b[2] for a, b in zip(now, then, strict=True) if a[0].endswith("_bucket")]
    rank = q * counts[-1]
    for i, c in enumerate(counts):
        if c >= rank:
            lo, lo_count = (0.0, 0.0) if i == 0 else (bounds[i - 1], counts[i - 1])
            return lo + (bounds[i] - lo) * (rank - lo_count) / (c - lo_count)
    return math.inf  # pragma: no cover


def test_dev_alerts_fire_at_minute_zero(dev: list[Incident]) -> None:
    inc = by_id(dev, "tessel-search-traffic-surge")
    assert _quantile(0.99, _series(inc, "http_request_duration_seconds")[0], 5) > 1

    inc = by_id(dev, "quarry-billing-cache-leak")
    ws = render.value_at(_series(inc, "container_memory_working_set_bytes")[0], 0)
    limit = render.value_at(_series(inc, "kube_pod_container_resource_limits")[0], 0)
    assert ws / limit > 0.9

    inc = by_id(dev, "parcel-router-rollout-panic")
    reqs = _series(inc, "http_requests_total")
    errors = _rate([s for s in reqs if s.labels["code"].startswith("5")], 5)
    assert errors / _rate(reqs, 5) > 0.05

    inc = by_id(dev, "claimsdesk-hikari-exhausted")
    assert render.value_at(_series(inc, "hikaricp_connections_pending")[0], 0) > 0.25 * 20
    assert render.value_at(_series(inc, "hikaricp_connections_active")[0], 0) == 20

    inc = by_id(dev, "fare-quote-seatgrid-outage")
    reqs = _series(inc, "http_requests_total")
    assert _rate([s for s in reqs if s.labels["code"].startswith("5")], 2) > 5

    inc = by_id(dev, "vantage-gateway-debug-logs-fill-disk")
    avail = render.value_at(
        _series(inc, "node_filesystem_avail_bytes", mountpoint="/var/log")[0], 0
    )
    size = render.value_at(_series(inc, "node_filesystem_size_bytes", mountpoint="/var/log")[0], 0)
    assert avail / size * 100 < 100 - 92

    inc = by_id(dev, "tariff-calc-full-gc-storm")
    gc = _series(inc, "jvm_gc_pause_seconds")
    assert _rate(gc, 5, lambda n: n.endswith("_sum")) > 0.25

    inc = by_id(dev, "tally-projector-consumer-lag")
    lag = sum(render.value_at(s, 0) for s in _series(inc, "kafka_consumergroup_lag"))
    assert lag > 500_000


# --- scoring --------------------------------------------------------------------------


def test_score_names_the_cause_from_root_cause_claims_or_first_hypothesis(
    dev: list[Incident],
) -> None:
    inc = by_id(dev, "parcel-router-rollout-panic")
    claim = ("root_cause", "The 5.13.0 release introduced a nil pointer panic on /v2/quotes.")
    assert score(inc, [claim], [], "").cause_named
    assert not score(inc, [("observation", claim[1])], [], "").cause_named
    assert score(inc, [], ["A bad rollout caused a regression in quotes"], "").cause_named
    later = ["Traffic spike", "A regression in version 5.13.0"]
    assert not score(inc, [], later, "").cause_named


def test_score_finds_and_misses_facts(dev: list[Incident]) -> None:
    inc = by_id(dev, "parcel-router-rollout-panic")
    answer = (
        "Since the rollout about 14 min ago, POST /v2/quotes returns HTTP 500 for ~7.4% of "
        "requests, only on the new version."
    )
    claims = [("observation", "Pods of 5.13.0 log a nil pointer dereference panic.")]
    result = score(inc, claims, [], answer)
    assert set(result.facts_found) == {"deploy_time", "version", "route", "ratio", "panic"}
    assert result.facts_missing == ()
    thin = score(inc, [], [], "Something is wrong with parcel-router.")
    assert thin.facts_found == ()
    assert set(thin.facts_missing) == {f.id for f in inc.key.facts}


def test_score_catches_false_statements_in_their_scope(dev: list[Incident]) -> None:
    inc = by_id(dev, "parcel-router-rollout-panic")
    blamed = score(inc, [("root_cause", "The geocode cache flush caused the errors")], [], "")
    assert blamed.false_statements == ("geocode_cause",)
    mentioned = score(inc, [], [], "The geocode cache dip 100 minutes ago is unrelated.")
    assert mentioned.false_statements == ()
    in_hypothesis = score(inc, [], ["5.13.0 regression", "memory exhaustion on the pods"], "")
    assert in_hypothesis.false_statements == ("resource_cause",)
    anywhere = score(inc, [], [], "p99 latency of /v2/quotes rose 10x after the rollout.")
    assert anywhere.false_statements == ("latency_10x",)


def test_a_number_in_a_pattern_is_not_matched_inside_a_decimal(dev: list[Incident]) -> None:
    inc = by_id(dev, "tariff-calc-full-gc-storm")
    pool = "old gen used 3.8 GiB (96.1% of the 4 GiB maximum); max 3.8 GiB in the window"
    assert score(inc, [], [], pool).false_statements == ()
    assert score(inc, [], [], "the heap maximum is 8 GiB").false_statements == ("heap_max_wrong",)
    assert "old_gen" in score(inc, [], [], pool).facts_found


def test_a_number_in_a_pattern_ends_where_its_pattern_says(dev: list[Incident]) -> None:
    inc = by_id(dev, "claimsdesk-hikari-exhausted")
    ratio = "5xx ratio rose to 31% (max 100% over the window); pool max 20, 100.5 ms waits"
    assert score(inc, [], [], ratio).false_statements == ()
    assert score(inc, [], [], "pool max 100 connections").false_statements == ("pool_max_wrong",)
    assert score(inc, [], [], "the pool size is 50.").false_statements == ("pool_max_wrong",)
    # a pattern that goes on to a percent sign, however far, still matches one
    spelled = _compiled(r"(?:\b90\b|ninety|about\s+ninety)\s*(?:%|percent)")
    assert spelled.search("CPU at 90%") and not spelled.search("CPU at 90.5%")


def test_the_key_recognises_its_own_statements(every: list[Incident]) -> None:
    failures = 0
    for inc in every:
        key = inc.key
        failures += not score(inc, [("root_cause", key.cause.text)], [], "").cause_named
        found = score(inc, [], [], " ".join(f.text for f in key.facts)).facts_found
        failures += len(found) != len(key.facts)
        for f in key.false:
            failures += (
                f.id not in score(inc, [("root_cause", f.text)], [], f.text).false_statements
            )
        truth = " ".join([key.cause.text, *(f.text for f in key.facts)])
        failures += bool(
            score(inc, [("root_cause", key.cause.text)], [truth], truth).false_statements
        )
        herring = score(inc, [("root_cause", inc.red_herring)], [], "").false_statements
        failures += not herring
    assert failures == 0


def test_a_withheld_hypothesis_does_not_name_the_cause(dev: list[Incident]) -> None:
    inc = by_id(dev, "parcel-router-rollout-panic")
    allowed = ["A bad rollout caused a regression in quotes", "Traffic spike"]
    answer = "Unconfirmed hypotheses:\n- Traffic spike\n"
    shown = shown_in(answer, allowed)
    assert shown == ["Traffic spike"]
    assert not score(inc, [], allowed, answer, shown=shown).cause_named
    assert score(inc, [], allowed, answer).cause_named, "without shown: every allowed one"
