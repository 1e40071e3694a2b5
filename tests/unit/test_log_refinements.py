"""Log signatures that refine a diagnosis rule: they say why its premises changed."""

from __future__ import annotations

from services.executor.log_causes import unless_held
from tests.support.logged_lines import firing as _firing
from tests.support.logged_lines import line as _line


def test_a_signature_refines_the_rule_it_names_the_reason_of() -> None:
    dns = [_line(-4, "java.net.UnknownHostException: rx-router.corp.example")]
    failing = [("dependency-failing", "a dependency failure")]
    hit = unless_held(failing, dns, [], [_firing()])
    assert hit is not None and hit.id == "name-resolution-failing"
    # behind a circumstantial rule, the first rule beyond circumstance is the one refined
    assert unless_held([("deploy-alert", "x"), *failing], dns, [], [_firing()]) is not None
    # a pool's exhaustion message says less than the rule that names slow queries
    timeout = [_line(-4, "HikariPool-1 - Connection is not available, request timed out")]
    assert unless_held([("slow-queries-hold-pool", "x")], timeout, [], [_firing()]) is None
    assert unless_held([("dependency-failing", "x")], timeout, [], [_firing()]) is None


def test_raised_logging_names_why_a_volume_fills_only_beside_that_rule() -> None:
    raised = _line(-100, "SET GLOBAL general_log = 'ON';  -- capture statements", "INFO")
    booted = _line(-78, 'bootstrap complete {"app_env":"prod","log_level":"debug"}', "INFO")
    filling = [("volume-filling", "the volume is filling up")]
    for line in (raised, booted):
        hit = unless_held(filling, [line], [], [_firing()])
        assert hit is not None and hit.id == "logging-raised", line.message
        # alone it says nothing failed: no cause without the rule it refines
        assert unless_held([], [line], [], [_firing()]) is None
        assert unless_held([("pool-exhausted", "x")], [line], [], [_firing()]) is None
    # routine settings and a setting logged before the two hours name nothing
    quiet = _line(-20, 'bootstrap complete {"log_level":"info"}', "INFO")
    assert unless_held(filling, [quiet], [], [_firing()]) is None
    old = _line(-130, "SET GLOBAL general_log = 'ON'", "INFO")
    assert unless_held(filling, [old, raised], [], [_firing()]) is None


def test_a_refining_signature_names_the_reason_even_beside_louder_other_errors() -> None:
    flood = _line(-4, "flood stage disk watermark [95%] exceeded on [es-3]", "WARN")
    refused = [_line(-m, "dial tcp 10.0.3.7:6379: connect: connection refused") for m in (9, 8, 7)]
    hit = unless_held([("volume-filling", "x")], [flood, *refused], [], [_firing()])
    assert hit is not None and hit.id == "datastore-full"


def test_slow_outgoing_calls_name_why_transactions_stay_open_only_beside_that_rule() -> None:
    slow = _line(
        -9, "payvault: POST https://psp.example/v3/authorise took 6120ms (threshold 1000ms)", "WARN"
    )
    open_tx = [("idle-in-transaction-sessions", "sessions sit idle in transaction")]
    hit = unless_held(open_tx, [slow], [], [_firing()])
    assert hit is not None and hit.id == "slow-calls-in-transaction"
    assert "psp.example" in hit.cause("en"), "the quote keeps the call's target"
    assert unless_held([], [slow], [], [_firing()]) is None
    assert unless_held([("volume-filling", "x")], [slow], [], [_firing()]) is None


def test_a_leak_names_why_sessions_sit_idle_in_transaction() -> None:
    leak = _line(
        -9, "Datasource '<default>': Connection leak of ConnectionWrapper@3f6e1b2a", "WARN"
    )
    hit = unless_held([("idle-in-transaction-sessions", "x")], [leak], [], [_firing()])
    assert hit is not None and hit.id == "connection-leak"


def test_a_purged_cache_names_why_traffic_surged_only_beside_that_rule() -> None:
    surge = [("traffic-surge", "a traffic surge")]
    for message in (
        'fastly: POST /service/4vQk/purge_all -> 200 {"status":"ok"}',
        "deploy hook: release web-2025.07.14.1 rolled out, invalidating CDN",
        "cloudfront: CreateInvalidation for distribution E2QWRUHAPOMQZL, paths /*",
        "redis-cli -h sessions-cache FLUSHALL",
    ):
        hit = unless_held(surge, [_line(-14, message, "INFO")], [], [_firing()])
        assert hit is not None and hit.id == "cache-purged", message
        assert unless_held([], [_line(-14, message, "INFO")], [], [_firing()]) is None
    routine = _line(-14, "cache hit c:coupon:SPRING25 ttl=287", "INFO")
    assert unless_held(surge, [routine], [], [_firing()]) is None


def test_slow_calls_name_why_consumers_fall_behind_even_behind_circumstance_alone() -> None:
    lines = [_line(-m, "smtp delivery deferred", "WARN") for m in (27, 20, 5)]
    behind = [("consumer-fell-behind", "a slow consumer")]
    hit = unless_held(behind, lines, [], [_firing()])
    assert hit is not None and hit.id == "consumer-calls-slow"
    # a signature that names a cause on its own still goes first
    oom = _line(-3, "java.lang.OutOfMemoryError: Java heap space")
    hit = unless_held(behind, [*lines, oom, oom], [], [_firing()])
    assert hit is not None and hit.id == "out-of-memory"
    assert unless_held([("traffic-surge", "x")], lines, [], [_firing()]) is None
