"""Series claims in words: a usage against its limit, rates that are always stated,
a byte rate per minute, second and hour; the verifier holds each."""

from __future__ import annotations

from services.executor.claim_templates import templates
from services.executor.series_claims import SeriesRef, diagnose, wording
from services.executor.tools.promql import catalogue
from services.executor.tools.series_shares import add_shares
from services.executor.tools.series_text import series_text
from services.executor.tools.units import format_quantity
from services.verifier.structure import check_claim
from tests.support.series_items import item, series_of


def test_a_usage_states_its_share_of_its_limit_and_the_verifier_holds_it() -> None:
    used = item(lambda i: 4e8 + i * 2.5e6, "bytes", "memory_working_set", pod="p")
    other_pod = item(lambda i: 5e8, "bytes", "memory_limit", pod="q")
    limit = item(lambda i: 1073741824.0, "bytes", "memory_limit", pod="p")
    add_shares([used, other_pod, limit], catalogue())
    f = used["facts"]
    assert (f["limit"], f["limit_what"]) == ("1 GiB", "memory limit")
    assert f["share"] == format_quantity(f["values"]["at_onset"] / 1073741824.0, "ratio")
    t = templates()["series"]
    for lang in ("en", "zh"):
        claim, ref = wording(used, lang, t), series_text(used)
        assert f["share"] in claim
        if lang == "en":  # "20 of 20": the usage, then its limit
            assert f" of 1 GiB ({f['share']} of the memory limit)" in claim
        assert all(r.found and not r.conflict for r in check_claim(claim, [ref])), claim
        for old, new in ((f["share"], "12.5%"), ("1 GiB", "2 GiB")):
            edited = check_claim(claim.replace(old, new), [ref])
            assert any(r.conflict or not r.found for r in edited), (lang, old)
    alone = item(lambda i: 4e8, "bytes", "memory_working_set", pod="p")
    add_shares([alone], catalogue())
    assert "share" not in alone["facts"]


def test_no_share_is_stated_above_the_limit() -> None:
    used = item(lambda i: 4.3e9, "bytes", "heap_used")
    ceiling = item(lambda i: 4e9, "bytes", "heap_max")
    add_shares([used, ceiling], catalogue())
    assert "share" not in used["facts"]


def test_database_sessions_state_their_share_of_max_connections() -> None:
    sessions = item(lambda i: 12.0, "count", "datastore_sessions", service="pg", state="active")
    ceiling = item(lambda i: 200.0, "count", "datastore_max_connections", service="pg")
    add_shares([sessions, ceiling], catalogue())
    for lang in ("en", "zh"):
        claim = wording(sessions, lang, templates()["series"])
        assert "200" in claim and "6%" in claim, claim
        checked = check_claim(claim, [series_text(sessions)])
        assert all(r.found and not r.conflict for r in checked), claim


def test_a_steady_produce_rate_is_stated_beside_a_growing_lag() -> None:
    lag = item(lambda i: 10.0 if i < 200 else 10.0 + (i - 200) * 400, "messages", "consumer_lag")
    produced = item(lambda i: 900.0, "/s", "produce_rate", topic="t")
    consumed = item(lambda i: 900.0 if i < 200 else 500.0, "/s", "consume_rate", topic="t")
    refs = [SeriesRef({}, s) for s in series_of([lag, produced, consumed])]
    stated = [r.series.query for r in diagnose(refs, "en").refs]
    assert "produce_rate" in stated  # steady, and still stated: the input did not rise
    claim = wording(produced, "en", templates()["series"])
    assert "rate unchanged: steady at 900/s" in claim, claim


def test_a_byte_rate_is_also_told_per_second_and_per_hour() -> None:
    free = item(lambda i: 8e9 - max(i - 100, 0) * 36e6, "bytes", "volume_free_bytes", pvc="a")
    f = free["facts"]
    assert f["per_minute"].endswith("MiB/min (1.1 MiB/s, 4 GiB/h)"), f["per_minute"]
    claim = wording(free, "en", templates()["series"])
    assert all(r.found and not r.conflict for r in check_claim(claim, [series_text(free)]))
    lag = item(lambda i: i * 40.0, "messages", "consumer_lag")
    assert "/s" not in lag["facts"]["per_minute"]


def test_an_event_rate_under_one_a_second_is_told_per_minute_too() -> None:
    full_gcs = item(lambda i: 0.005 if i < 150 else 0.352, "/s", "gc_full_collections")
    assert full_gcs["facts"]["at_onset"] == "0.352/s (21/min)"
    claim = wording(full_gcs, "en", templates()["series"])
    assert "(21/min)" in claim
    assert all(r.found and not r.conflict for r in check_claim(claim, [series_text(full_gcs)]))
    busy = item(lambda i: 40.0, "/s", "request_rate")
    assert busy["facts"]["at_onset"] == "40/s", "a busy rate is per second only"


def test_a_pool_without_a_maximum_states_its_share_of_its_open_connections() -> None:
    in_use = item(lambda i: 3.0 if i < 150 else 10.0, "count", "pool_active", pool="master")
    opened = item(lambda i: 10.0, "count", "pool_open", pool="master")
    add_shares([in_use, opened], catalogue())
    text = series_text(in_use)
    assert "10 of 10 (100% of the pool open)" in text, text
    maximum = item(lambda i: 20.0, "count", "pool_max", pool="master")
    in_use = item(lambda i: 3.0 if i < 150 else 10.0, "count", "pool_active", pool="master")
    add_shares([in_use, opened, maximum], catalogue())
    assert "10 of 20 (50% of the pool max)" in series_text(in_use), "the maximum first"
