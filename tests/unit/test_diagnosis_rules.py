"""Diagnosis rules that read order, peaks, repeats and labels; shares of a limit; log order."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from services.composer.checks import foreign_facts
from services.executor.claim_templates import templates
from services.executor.diagnosis import evaluate, rulebook
from services.executor.log_lines import distinct_first
from services.executor.series_claims import SeriesRef, diagnose, wording
from services.executor.tools.series_text import minutes_from_onset, series_text
from services.verifier.rules_file import default_verifier_rules
from services.verifier.structure import check_claim
from tests.support.series_items import (
    DEPLOY,
    ONSET,
    START,
    STEP,
    free_falling,
    item,
    series_of,
    swept,
)
from tests.support.series_items import deployed as _deployed
from tests.support.series_items import rules_held as _rules


def test_a_slowdown_counts_only_when_it_follows_the_deploy() -> None:
    after = item(lambda i: 0.2 if i < DEPLOY + 6 else 0.7, "seconds", "latency_p99")
    before = item(lambda i: 0.2 if i < DEPLOY - 30 else 0.7, "seconds", "latency_p99")
    assert "deploy-slowdown" in _rules([_deployed(), after])
    assert "deploy-slowdown" not in _rules([_deployed(), before])
    assert "deploy-slowdown" not in _rules([after])


def test_more_database_calls_at_the_same_traffic_after_a_deploy_is_an_n_plus_one() -> None:
    calls = item(lambda i: 120.0 if i < DEPLOY + 4 else 1200.0, "/s", "db_call_rate")
    steady = item(lambda i: 90.0, "/s", "request_rate")
    surge = item(lambda i: 90.0 if i < DEPLOY + 4 else 900.0, "/s", "request_rate")
    assert _rules([_deployed(), calls, steady])[0] == "deploy-more-db-calls"
    assert "deploy-more-db-calls" not in _rules([_deployed(), calls, surge])
    # each call as fast as before, more of them per request: both are stated as premises
    per_request = item(lambda i: 1.3 if i < DEPLOY + 4 else 13.0, "count", "db_calls_per_request")
    median = item(lambda i: 0.0012, "seconds", "db_query_median")
    [finding] = [
        f
        for f in evaluate(series_of([_deployed(), calls, steady, per_request, median]))
        if f.rule.id == "deploy-more-db-calls"
    ]
    assert {"db_calls_per_request", "db_query_median"} <= {s.query for s in finding.premises}


def test_cpu_that_rose_right_after_a_deploy_at_level_traffic_is_a_deploy_regression() -> None:
    cpu = item(lambda i: 0.8 if i < DEPLOY + 2 else 5.4, "cores", "cpu_usage")
    late = item(lambda i: 0.8 if i < DEPLOY + 40 else 5.4, "cores", "cpu_usage")
    steady = item(lambda i: 41.0, "/s", "request_rate")
    surge = item(lambda i: 41.0 if i < DEPLOY + 2 else 400.0, "/s", "request_rate")
    assert "deploy-cpu" in _rules([_deployed(), cpu, steady])
    assert "deploy-cpu" not in _rules([_deployed(), late, steady]), "too long after the deploy"
    assert "deploy-cpu" not in _rules([_deployed(), cpu, surge]), "traffic explains it"
    assert "deploy-cpu" not in _rules([cpu, steady]), "no deploy"


def test_a_leak_is_two_climbs_to_the_limit_and_two_oom_kills() -> None:
    def oom(restarts: int) -> list[dict[str, Any]]:
        return [
            item(lambda i: 1, "presence", "last_terminated_reason", reason="OOMKilled", pod="p"),
            item(lambda i: min(restarts, i // 80), "count", "restarts", pod="p"),
            item(lambda i: 2e8 + (i % 80) * 1e7, "bytes", "memory_working_set", pod="p"),
            item(lambda i: 1e9, "bytes", "memory_limit", pod="p"),
        ]

    assert _rules(oom(2))[0] == "memory-leak-oom"
    assert "memory-leak-oom" not in _rules(oom(1))
    # one kill 79 minutes before the onset and none since is no premise of this alert
    assert "oom-killed" not in _rules(oom(1))
    recent = oom(0)
    recent[1] = item(lambda i: 0 if i < 230 else 1, "count", "restarts", pod="p")
    assert "oom-killed" in _rules(recent)


def test_a_cause_names_the_failing_dependency_its_series_name() -> None:
    failing = item(lambda i: 0 if i < 200 else 40.0, "/s", "dependency_errors", dependency="redis")
    unnamed = item(lambda i: 0 if i < 200 else 40.0, "/s", "dependency_errors", operation="get")

    def cause(it: dict[str, Any]) -> str:
        [s] = series_of([it])
        return diagnose([SeriesRef({}, s)], "en").causes[0][1]

    assert "redis is failing" in cause(failing)
    assert "its database or cache is failing" in cause(unnamed)


def test_a_repeated_log_message_comes_after_the_other_messages() -> None:
    def line(text: str) -> dict[str, Any]:
        return {"claim_text": f"At 2026-12-05 14:0{len(text) % 9}:00, api logged WARN: {text}"}

    logs = [line("retry 1 of job 8812"), line("retry 2 of job 8813"), line("disk 91% full")]
    ordered = [c["claim_text"].split(": ", 1)[1] for c in distinct_first(logs)]
    assert ordered == ["retry 1 of job 8812", "disk 91% full", "retry 2 of job 8813"]


def test_a_change_is_placed_in_minutes_before_the_onset_and_the_verifier_holds_it() -> None:
    # the level steps up at sample 200; the onset is sample 238 (19 minutes later)
    stepped = item(lambda i: 5.0 if i < 200 else 40.0, "count", "pool_active", pool="p")
    f = stepped["facts"]
    assert f["began_before"] and f["began_before"].endswith("min before the alert's onset")
    minutes = int(f["began_before"].split()[0])
    assert 17 <= minutes <= 21
    claim = wording(stepped, "en", templates()["series"])
    ref = series_text(stepped)
    assert f["began_before"] in claim and f["began_before"] in ref
    assert all(r.found and not r.conflict for r in check_claim(claim, [ref])), claim
    edited = check_claim(claim.replace(f"{minutes} min", f"{minutes + 30} min"), [ref])
    assert any(r.conflict or not r.found for r in edited)


def test_a_new_version_is_placed_in_minutes_before_the_onset() -> None:
    new = _deployed()
    onset = datetime.fromtimestamp(ONSET, UTC)
    new["facts"]["first_seen"] = "2026-12-05T14:04:00Z"
    new["facts"]["seen_before"] = minutes_from_onset(START + DEPLOY * STEP, onset)
    assert new["facts"]["seen_before"] == "34 min before the alert's onset"
    claim, ref = wording(new, "en", templates()["series"]), series_text(new)
    assert "34 min before the alert's onset" in claim and "34 min before" in ref
    assert all(r.found and not r.conflict for r in check_claim(claim, [ref])), claim


def _swept(name: str, began: int) -> dict[str, Any]:
    """A swept series: the sweep names it by its metric; it rose from sample ``began``."""
    it = item(lambda i: 2.0 if i < began else 40.0, "/s", "sweep")
    it["what"] = name
    return it


def test_a_swept_metric_names_its_cause_by_its_words_near_the_onset_only() -> None:
    def first(name: str, began: int = 220) -> tuple[str, str]:
        causes = diagnose([SeriesRef({}, s) for s in series_of([_swept(name, began)])], "en")
        return causes.causes[0] if causes.causes else ("", "")

    rule, cause = first("dotnet_gc_collections_total")
    assert rule == "swept-gc" and "dotnet_gc_collections_total" in cause
    assert first("orders_stream_num_pending")[0] == "swept-backlog"
    assert first("mongo_pool_wait_queue_size")[0] == "swept-pool"
    assert first("checkout_upstream_timeouts_total")[0] == "swept-dependency"
    # a name that says neither a cause nor both pool and waiting; a rise long before the onset
    assert first("mongo_pool_checked_out")[0] == ""
    assert first("invoice_pending_total")[0] == ""
    assert first("dotnet_gc_collections_total", began=40)[0] == ""
    # names whose words mean something else: event-loop lag, allocation, idle keep-alives,
    # a proxy's callers ("downstream")
    for other in (
        "nodejs_eventloop_lag_seconds",
        "jvm_gc_memory_allocated_bytes_total",
        "nginx_connections_waiting",
        "envoy_http_downstream_rq_timeout",
    ):
        assert first(other)[0] == "", other
    assert first("mean gc_pause_seconds")[0] == "swept-gc"
    # a JMX-derived name keeps the MBean's type in one word; a cause names it whole
    long = "flink_taskmanager_Status_JVM_GarbageCollector_G1_Old_Generation_Time"
    assert first(long) == ("swept-gc", first(long)[1]) and f" {long} rose" in first(long)[1]
    too_long = "a_" * 70 + "gc_seconds"
    assert "metric of the garbage collector" in first(too_long)[1], "never cut inside a name"


def test_full_collections_and_a_busy_worker_pool_name_their_causes() -> None:
    full = item(lambda i: 0.01 if i < 200 else 0.6, "/s", "gc_full_collections", pod="p")
    assert _rules([full])[0] == "gc-full-collections"
    busy = item(lambda i: 20 if i < 200 else 200, "count", "workers_busy", pod="p")
    ceiling = item(lambda i: 200, "count", "workers_max", pod="p")
    assert _rules([busy, ceiling])[0] == "workers-exhausted"
    assert "workers-exhausted" not in _rules([busy])
    always = item(lambda i: 200, "count", "workers_busy", pod="p")
    assert "workers-exhausted" not in _rules([always, ceiling])


def test_a_surge_is_a_1_5_fold_rise_with_saturation_after_it() -> None:
    requests = item(lambda i: 90.0 if i < 200 else 400.0, "/s", "request_rate")
    drift = item(lambda i: 90.0 if i < 200 else 120.0, "/s", "request_rate")
    later = item(lambda i: 0.2 if i < 206 else 0.9, "seconds", "latency_p99")
    earlier = item(lambda i: 0.2 if i < 150 else 0.9, "seconds", "latency_p99")
    assert "traffic-surge-saturated" in _rules([requests, later])
    assert "traffic-surge-saturated" not in _rules([requests, earlier])
    assert "traffic-surge-saturated" not in _rules([drift, later])
    assert "traffic-surge-saturated" not in _rules([requests])


def test_errors_soon_after_a_new_replicaset_are_a_deploy_regression() -> None:
    rollout = item(lambda i: 1, "presence", "replicasets", replicaset="api-7f9c")
    rollout["facts"]["values"]["first_seen"] = START + DEPLOY * STEP
    errors = item(lambda i: 0.001 if i < DEPLOY + 6 else 0.2, "ratio", "error_ratio")
    late = item(lambda i: 0.001 if i < DEPLOY + 70 else 0.2, "ratio", "error_ratio")
    assert "deploy-errors" in _rules([rollout, errors])
    assert "deploy-errors" not in _rules([rollout, late])
    assert "deploy-errors" not in _rules([errors])


def test_every_cause_passes_the_composers_screen_on_its_own() -> None:
    """A cause states no number of its own: the composer withholds a hypothesis with a
    number no verified claim holds, so "rose 1.5-fold or more" would never be shown.
    (A name such as OOMKilled is stated by the premises' own claims.)"""
    rules = default_verifier_rules()
    slot = re.compile(r"\{\w+\|([^{}]*)\}")
    blocked = {
        (rule.id, lang): found
        for rule in rulebook().rules
        for lang, text in rule.cause.items()
        if (found := [f for f in foreign_facts([], slot.sub(r"\1", text), rules) if "number" in f])
    }
    assert blocked == {}


def test_one_oom_kill_and_memory_climbing_back_to_the_limit_is_a_leak() -> None:
    # killed once before the window; since then the working set climbs to 93% of 1 GiB
    climbing = [
        item(lambda i: 1, "presence", "last_terminated_reason", reason="OOMKilled", pod="p"),
        item(lambda i: 0 if i < 20 else 1, "count", "restarts", pod="p"),
        item(lambda i: 4e8 + i * 2.2e6, "bytes", "memory_working_set", pod="p"),
        item(lambda i: 1.0e9, "bytes", "memory_limit", pod="p"),
        item(lambda i: 3e8 + i * 2e6, "bytes", "heap_used"),
    ]
    rules = _rules(climbing)
    assert rules[0] == "memory-leak-climbs-back" and "oom-killed" not in rules, "killed long ago"
    flat = [*climbing[:2], item(lambda i: 9.3e8, "bytes", "memory_working_set", pod="p")]
    assert "memory-leak-climbs-back" not in _rules([*flat, climbing[3]])


def test_a_logs_volume_filling_names_logs_by_the_volumes_name() -> None:
    def volume(claim: str) -> dict[str, Any]:
        fn = lambda i: 0.4 if i < 150 else 0.4 - 0.004 * (i - 150)  # noqa: E731
        return item(fn, "ratio", "volume_free_ratio", persistentvolumeclaim=claim)

    assert _rules([volume("traefik-logs")])[0] == "logs-volume-filling"
    assert _rules([volume("logging-data")])[0] == "logs-volume-filling"
    assert _rules([volume("applog-larder-0")])[0] == "logs-volume-filling"
    assert _rules([volume("catalog-data")]) == ["volume-filling"]
    assert _rules([volume("blogs-db")]) == ["volume-filling"], "a word, not a substring"


def test_a_leaks_premises_are_one_pods() -> None:
    growing = item(lambda i: 4e8 + i * 1.8e6, "bytes", "memory_working_set", pod="a")
    full = item(lambda i: 9.5e8, "bytes", "memory_working_set", pod="b")
    limits = [item(lambda i: 1.0e9, "bytes", "memory_limit", pod=p) for p in ("a", "b")]
    killed = item(lambda i: 1, "presence", "last_terminated_reason", reason="OOMKilled", pod="c")
    assert "memory-leak-climbs-back" not in _rules([growing, full, *limits, killed])


def test_what_grew_as_the_free_space_fell_is_what_fills_the_disk() -> None:
    def grew(name: str, began: int) -> dict[str, Any]:
        return swept(name, lambda i: 4e8 if i < began else 4e8 + (i - began) * 2e8, "bytes")

    def free(began: int) -> dict[str, Any]:
        return free_falling(began, 0.65, 0.009, "data-0")

    dlq = "logstash_pipeline_dead_letter_queue_size_in_bytes"
    findings = evaluate(series_of([grew(dlq, 180), free(181)]))
    assert findings[0].rule.id == "swept-fills-disk"
    [cause] = [
        c
        for r, c in diagnose(
            [SeriesRef({}, s) for s in series_of([grew(dlq, 180), free(181)])], "en"
        ).causes
        if r == "swept-fills-disk"
    ]
    assert dlq in cause
    assert "swept-fills-disk" not in _rules([grew(dlq, 120), free(181)]), "grew long before"
    assert "swept-fills-disk" not in _rules([grew("jvm_memory_used_bytes", 180), free(181)])
    assert "swept-fills-disk" not in _rules([grew(dlq, 180)]), "no free space fell"


def test_a_leak_outside_the_heap_is_named_off_heap() -> None:
    def leak(offheap_grows: bool) -> list[dict[str, Any]]:
        saw = lambda i: 5e7 + (i % 80) * 1.2e7  # noqa: E731 - climbs, killed every 80 samples
        flat = lambda i: 5e7  # noqa: E731
        return [
            item(lambda i: 1, "presence", "last_terminated_reason", reason="OOMKilled", pod="p"),
            item(lambda i: i // 80, "count", "restarts", pod="p"),
            item(lambda i: 2e8 + (i % 80) * 1.2e7, "bytes", "memory_working_set", pod="p"),
            item(lambda i: 1.2e9, "bytes", "memory_limit", pod="p"),
            item(saw if offheap_grows else flat, "bytes", "offheap_used", pod="p", id="direct"),
            item(lambda i: 3.9e8, "bytes", "heap_used", pod="p"),
        ]

    assert _rules(leak(True))[0] == "memory-leak-offheap"
    assert "memory-leak-offheap" not in _rules(leak(False))
    assert _rules(leak(False))[0] == "memory-leak-oom"


def test_memory_that_grows_again_after_an_oom_kill_is_a_leak() -> None:
    def pod(growth: float) -> list[dict[str, Any]]:
        return [
            item(lambda i: 1, "presence", "last_terminated_reason", reason="OOMKilled", pod="p"),
            item(lambda i: 0 if i < 200 else 1, "count", "restarts", pod="p"),
            item(lambda i: 9e7 + (i % 200) * growth, "bytes", "heap_used", pod="p"),
        ]

    assert _rules(pod(2e6))[0] == "memory-leak-regrows"
    # a flat heap after the restart: the container ran out of memory, no leak shown
    assert "memory-leak-regrows" not in _rules(pod(0.0))
    assert "oom-killed" in _rules(pod(0.0))


def test_a_logs_volume_still_shrinking_names_logs_whenever_its_fall_began() -> None:
    def free(start: int) -> dict[str, Any]:
        return item(
            lambda i: 0.8 if i < start else max(0.8 - 0.003 * (i - start), 0.05),
            "ratio",
            "volume_free_ratio",
            persistentvolumeclaim="logs-app-0",
        )

    # the fall began 114 minutes before the onset, before even a volume rule's window
    assert "logs-volume-shrinking" in _rules([free(10)])
    assert "logs-volume-shrinking" not in _rules([free(400)])


def test_a_volume_may_have_begun_to_fill_long_before_its_prediction_fired() -> None:
    # 100 minutes before the onset: outside the book's window, inside a volume rule's
    assert rulebook().lead_minutes * 60 < 100 * 60 < 110 * 60
    assert _rules([free_falling(38, 0.8, 0.003, "data-db-0")]) == ["volume-filling"]
    # the book's window still holds for every other change
    cpu = item(lambda i: 0.2 if i < 38 else 0.9, "cores", "cpu_usage", pod="api-0")
    rps = item(lambda i: 100.0 if i < 38 else 300.0, "req/s", "request_rate", pod="api-0")
    assert _rules([cpu, rps]) == []
    assert _rules([free_falling(38, 0.8, 0.003, "data-db-0"), cpu, rps]) == ["volume-filling"]


def test_a_heap_that_refills_to_its_maximum_after_a_restart_is_a_leak() -> None:
    def run(peak: float) -> list[dict[str, Any]]:
        return [
            item(lambda i: 0 if i < 200 else 1, "count", "restarts", pod="p"),
            item(lambda i: 1e8 + (i % 200) * peak / 200, "bytes", "heap_used"),
            item(lambda i: 1.5e9, "bytes", "heap_max"),
        ]

    assert _rules(run(1.45e9))[0] == "memory-leak-heap-refills"
    # a heap that never came near its maximum: the restart had another reason
    assert "memory-leak-heap-refills" not in _rules(run(6e8))


def test_sessions_left_idle_in_transaction_hold_the_connections_without_pool_metrics() -> None:
    idle = "idle in transaction"
    oldest = item(lambda i: 0.4 if i < 200 else 9.0, "seconds", "longest_transaction", state=idle)
    sessions = item(lambda i: 2.0 if i < 200 else 30.0, "count", "datastore_sessions", state=idle)
    assert _rules([oldest, sessions])[0] == "idle-in-transaction-sessions"
    # active sessions that rose are no transaction left open
    active = item(lambda i: 2.0 if i < 200 else 30.0, "count", "datastore_sessions", state="active")
    assert "idle-in-transaction-sessions" not in _rules([oldest, active])
    assert "idle-in-transaction-sessions" not in _rules([sessions])


def test_a_pool_that_filled_long_before_its_calls_failed_is_the_cause() -> None:
    def pool(began: int) -> list[dict[str, Any]]:
        climb = item(
            lambda i: min(3 + max(i - began, 0) * 0.5, 40), "count", "pool_active", pool="fv"
        )
        top = item(lambda i: 40.0, "count", "pool_max", pool="fv")
        return [climb, top]

    def failing(began: int) -> list[dict[str, Any]]:
        fails = item(lambda i: 0.0 if i < began else 2.0, "/s", "client_errors", dependency="fv")
        slow = item(
            lambda i: 0.15 if i < began else 4.9, "s", "client_latency_p99", dependency="fv"
        )
        ratio = item(
            lambda i: 0.0 if i < began else 0.3, "ratio", "client_error_ratio", dependency="fv"
        )
        return [fails, slow, ratio]

    # the pool filled over 40 minutes; the calls failed only once it was full
    assert _rules([*pool(150), *failing(230)])[0] == "pool-filled-first"
    # the calls failed first and the pool filled right after: the dependency is the cause
    held = _rules([*pool(152), *failing(150)])
    assert "pool-filled-first" not in held and held[0] == "dependency-failing"
