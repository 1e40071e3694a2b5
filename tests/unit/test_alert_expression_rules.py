"""Diagnosis rules that read the alert's own expression, and how circumstantial ones rank."""

from __future__ import annotations

from typing import Any

from services.executor.diagnosis import evaluate
from tests.support.series_items import DEPLOY, START, STEP, free_falling, item, series_of, swept
from tests.support.series_items import deployed as _deployed
from tests.support.series_items import rules_held as _rules

LATENCY = "histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket[5m])))"


def _alert(fn: Any, worse: str = "rose", expr: str = LATENCY) -> dict[str, Any]:
    series = item(fn, "count", "alert")
    series["worse"], series["expr"] = worse, expr
    return series


def test_the_alerts_own_expression_worsening_after_a_deploy_names_it() -> None:
    after = _alert(lambda i: 180.0 if i < DEPLOY + 6 else 2900.0)
    before = _alert(lambda i: 180.0 if i < DEPLOY - 40 else 2900.0)
    assert "deploy-alert" in _rules([_deployed(), after])
    assert "deploy-alert" not in _rules([_deployed(), before])
    # a rollout takes minutes: a symptom 12 minutes after it still follows it, 20 do not
    late = _alert(lambda i: 180.0 if i < DEPLOY + 24 else 2900.0)
    assert "deploy-alert" in _rules([_deployed(), late])
    later = _alert(lambda i: 180.0 if i < DEPLOY + 40 else 2900.0)
    assert "deploy-alert" not in _rules([_deployed(), later])
    assert "deploy-alert" not in _rules([after]), "no deploy, no deploy cause"
    # an alert that fires below its threshold worsens when its expression falls
    falling = _alert(lambda i: 0.4 if i < DEPLOY + 6 else 0.05, worse="fell")
    assert "deploy-alert" in _rules([_deployed(), falling])
    falling["worse"] = "rose"
    assert "deploy-alert" not in _rules([_deployed(), falling])
    # a deploy is named from the request outcomes it changes, never from memory or a disk
    memory = _alert(lambda i: 0.4 if i < DEPLOY + 6 else 0.93, expr="container_memory_rss / 1e9")
    assert "deploy-alert" not in _rules([_deployed(), memory])


def test_a_doubled_request_rate_before_the_alert_worsened_is_a_surge() -> None:
    surge = item(lambda i: 900.0 if i < 200 else 4000.0, "/s", "request_rate")
    mild = item(lambda i: 900.0 if i < 200 else 1300.0, "/s", "request_rate")
    queue = _alert(lambda i: 0.0 if i < 201 else 1600.0)
    early = _alert(lambda i: 0.0 if i < 150 else 1600.0)
    assert _rules([surge, queue])[0] == "traffic-surge-alert"
    assert "traffic-surge-alert" not in _rules([mild, queue])
    assert "traffic-surge-alert" not in _rules([surge, early]), "the symptom came first"


def test_a_circumstantial_rule_ranks_as_two_premises_however_many_markers_held() -> None:
    generation = item(lambda i: 41 if i < DEPLOY else 42, "count", "deployment_generation")
    replicaset = item(lambda i: 1, "presence", "replicasets", replicaset="rs-2")
    replicaset["facts"]["values"]["first_seen"] = START + DEPLOY * STEP
    symptom = _alert(lambda i: 0.01 if i < DEPLOY + 4 else 0.3)
    markers = [_deployed(), generation, replicaset, symptom]
    [finding] = [f for f in evaluate(series_of(markers)) if f.rule.id == "deploy-alert"]
    assert len(finding.premises) >= 3, "more series than the two it ranks as"
    # a rule on two premises outranks it (ties go to the file's order), though three
    # series hold the deploy and its symptom
    errors = item(lambda i: 0 if i < DEPLOY + 4 else 40.0, "/s", "dependency_errors")
    ratio = item(lambda i: 0.001 if i < DEPLOY + 4 else 0.3, "ratio", "error_ratio")
    ranked = _rules([*markers, errors, ratio])
    assert ranked.index("datastore-failing") < ranked.index("deploy-alert")


def test_replicas_lost_before_the_alert_worsened_name_the_lost_capacity() -> None:
    def available(fall: int, to: float) -> dict[str, Any]:
        return item(
            lambda i: 5.0 if i < fall else to, "count", "replicas_available", deployment="d"
        )

    desired = item(lambda i: 5.0, "count", "replicas_desired", deployment="d")
    scaled_in = item(lambda i: 5.0 if i < 180 else 2.0, "count", "replicas_desired", deployment="d")
    lag = _alert(lambda i: 40.0 if i < 182 else 40.0 + (i - 182) * 9000.0)
    drained = [available(180, 2.0), desired, lag]
    assert _rules(drained)[0] == "replicas-lost"
    assert "replicas-lost" not in _rules([available(180, 2.0), scaled_in, lag]), "scaled in"
    assert "replicas-lost" not in _rules([available(180, 4.8), desired, lag]), "one pod short"
    assert "replicas-lost" not in _rules([available(230, 2.0), desired, lag]), "the alert first"
    # a direct cause outranks it: OOM-killed pods are unavailable too
    oom = [
        item(lambda i: 1, "presence", "last_terminated_reason", reason="OOMKilled", pod="p"),
        item(lambda i: 0 if i < 180 else 1, "count", "restarts", pod="p"),
    ]
    assert _rules([*drained, *oom])[0] == "oom-killed"


def test_slower_messages_before_the_alerts_backlog_grew_are_a_slow_consumer() -> None:
    slower = item(lambda i: 0.04 if i < 180 else 0.48, "s", "processing_time")
    backlog = 'sum by (topic, channel) (nsq_depth{type="channel"})'
    grew = _alert(lambda i: 30.0 if i < 181 else 160000.0, expr=backlog)
    assert _rules([slower, grew])[0] == "consumer-slower-alert"
    early = _alert(lambda i: 30.0 if i < 120 else 160000.0, expr=backlog)
    assert "consumer-slower-alert" not in _rules([slower, early]), "the backlog came first"
    count = _alert(lambda i: 30.0 if i < 181 else 14000.0, expr="max (artemis_message_count)")
    assert _rules([slower, count])[0] == "consumer-slower-alert", "a queue's message count"
    latency = _alert(lambda i: 0.1 if i < 181 else 2.0)
    assert "consumer-slower-alert" not in _rules([slower, latency]), "no backlog in the alert"


def test_a_message_backlog_alert_that_grows_is_a_slow_consumer_at_least() -> None:
    backlog = "max by (topic, subscription) (pulsar_subscription_back_log) > 300000"
    grew = _alert(lambda i: 150.0 if i < 200 else 460000.0, expr=backlog)
    assert _rules([grew]) == ["alert-backlog-grows"]
    # waiters for a pool, a web server's request backlog: no consumers behind
    for other in ("hikaricp_connections_pending > 5", "puma_backlog > 10"):
        assert "alert-backlog-grows" not in _rules(
            [_alert(lambda i: 0 if i < 200 else 40, expr=other)]
        )
    # circumstantial: a rule with a premise of its own comes first
    slower = item(lambda i: 0.04 if i < 180 else 0.48, "s", "processing_time")
    ranked = _rules([slower, _alert(lambda i: 150.0 if i < 181 else 460000.0, expr=backlog)])
    assert ranked.index("consumer-slower-alert") < ranked.index("alert-backlog-grows")


def test_a_logging_setting_changed_just_before_the_disk_filled_names_the_logs() -> None:
    def setting(name: str, began: int) -> dict[str, Any]:
        return swept(name, lambda i: 1.0 if i < began else 0.0, "s")

    def free(began: int) -> dict[str, Any]:
        return free_falling(began, 0.25, 0.004, "pgdata-0")

    knob = "pg_settings_log_min_duration_statement_seconds"
    assert _rules([setting(knob, 150), free(156)])[0] == "swept-log-setting-lowered"
    assert "swept-log-setting-lowered" not in _rules([setting(knob, 100), free(156)]), "long before"
    assert "swept-log-setting-lowered" not in _rules([setting(knob, 150)]), "no free space fell"
    other = "pg_settings_work_mem_bytes"
    assert "swept-log-setting-lowered" not in _rules([setting(other, 150), free(156)])


def test_sessions_that_grow_with_the_collectors_work_name_gc_pressure_from_sessions() -> None:
    sessions = item(
        lambda i: 900.0 if i < 150 else 900.0 + (i - 150) * 2000, "count", "sessions_active"
    )
    gc = item(lambda i: 0.01 if i < 180 else 0.35, "ratio", "gc_time_ratio")
    assert _rules([sessions, gc])[0] == "gc-sessions"
    assert "gc-sessions" not in _rules([sessions]), "sessions alone say nothing of GC"
