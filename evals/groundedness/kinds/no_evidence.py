# ruff: noqa: E501 - claim wordings and log lines are data, one per line
"""Kinds without evidence: a query that found nothing."""

from __future__ import annotations

import random
from typing import Any

from evals.groundedness import evidence
from evals.groundedness.core import (
    Kind,
    Names,
    Values,
)
from evals.groundedness.kinds.alert_sources import W, base_view

# -- no evidence --------------------------------------------------------------------------


def _nolog_make(rng: random.Random, n: Names) -> Values:
    return {
        "app": n.name("-service"),
        "term": rng.choice(("OOMKilled", "deadlock", "timeout", "SERVFAIL")),
    }


def _nolog_ev(run_id: str, v: Values) -> dict[str, Any]:
    return evidence.loki_logs(
        run_id, [], {"log_topic": "application-logs", "query": f"{v['app']} {v['term']}"}
    )


NONE_LOGS = Kind(
    name="no_evidence_logs",
    source="loki/no-evidence",
    query_en="Are there error logs?",
    query_zh="有没有错误日志？",
    make=_nolog_make,
    view=base_view,
    evidence=_nolog_ev,
    raw_path="$.no_evidence",
    wordings=(
        W(
            "en",
            "The log query for {app} {term} found no matching logs.",
            ("query.service=app", "query.text=term", "total=0"),
            (
                "ent:app",
                "neg:found no matching logs>found matching logs",
                "sub:unsupported_conclusion:found no matching logs>shows {app} never had a {term}",
            ),
            excerpt=None,
            claim_type="negative_observation",
        ),
        W(
            "en",
            "Searching application-logs for {app} {term} returned no evidence.",
            ("query.service=app", "topic=application-logs", "total=0"),
            (
                "ent:app",
                "sub:unsupported_conclusion:returned no evidence>returned no evidence, so {app} is healthy",
            ),
            excerpt=None,
            claim_type="negative_observation",
        ),
        W(
            "zh",
            "当前查询未检索到 {app} 的 {term} 相关日志。",
            ("query.service=app", "query.text=term", "total=0"),
            (
                "ent:app",
                "neg:未检索到>检索到了",
                "sub:unsupported_conclusion:当前查询未检索到 {app} 的 {term} 相关日志>{app} 没有发生任何 {term} 问题",
            ),
            excerpt=None,
            claim_type="negative_observation",
        ),
        W(
            "zh",
            "在 application-logs 中按 {app} {term} 查询，结果为空。",
            ("query.service=app", "topic=application-logs", "total=0"),
            ("ent:app", "sub:unsupported_conclusion:结果为空>结果为空，说明该服务运行正常"),
            excerpt=None,
            claim_type="negative_observation",
        ),
    ),
)


def _nometric_make(rng: random.Random, n: Names) -> Values:
    return {
        "app": n.name("-api"),
        "alert": rng.choice(("HighErrorRate", "PodNotReady", "LatencyBudgetBurn")),
    }


def _nometric_ev(run_id: str, v: Values) -> dict[str, Any]:
    return evidence.request_alerts(
        run_id,
        [
            {
                "status": "firing",
                "labels": {"alertname": "Watchdog", "severity": "none"},
                "startsAt": "2026-11-18T00:00:00Z",
            }
        ],
        {"alert_name": v["alert"], "service": v["app"], "state": "firing"},
    )


NONE_METRICS = Kind(
    name="no_evidence_alerts",
    source="alertmanager/no-evidence",
    query_en="Is there an alert for this service?",
    query_zh="这个服务有告警吗？",
    make=_nometric_make,
    view=base_view,
    evidence=_nometric_ev,
    raw_path="$.no_evidence",
    wordings=(
        W(
            "en",
            "The alert query returned no firing {alert} alert for {app}.",
            ("query.alert_name=alert", "query.service=app", "total=0"),
            (
                "ent:app",
                "neg:returned no firing>returned a firing",
                "sub:unsupported_conclusion:The alert query returned no firing {alert} alert for {app}>{app} has no {alert} problem",
            ),
            excerpt=None,
            claim_type="negative_observation",
        ),
        W(
            "zh",
            "查询没有找到 {app} 正在触发的 {alert} 告警。",
            ("query.alert_name=alert", "query.service=app", "total=0"),
            (
                "ent:app",
                "neg:没有找到>找到了",
                "sub:unsupported_conclusion:查询没有找到 {app} 正在触发的 {alert} 告警>{app} 一切正常，不存在 {alert} 问题",
            ),
            excerpt=None,
            claim_type="negative_observation",
        ),
        W(
            "zh",
            "告警查询（alert_name={alert}, service={app}）没有返回任何结果。",
            ("query.alert_name=alert", "query.service=app", "total=0"),
            ("ent:app", "sub:negation:没有返回任何结果>返回了 1 条结果"),
            excerpt=None,
            claim_type="negative_observation",
        ),
    ),
)


def _noknow_make(rng: random.Random, n: Names) -> Values:
    return {"topic": f"{n.word()} failover"}


def _noknow_ev(run_id: str, v: Values) -> dict[str, Any]:
    return evidence.knowledge(run_id, [], {"query": str(v["topic"])})


NONE_KNOWLEDGE = Kind(
    name="no_evidence_runbook",
    source="knowledge/no-evidence",
    query_en="Is there a runbook for this?",
    query_zh="有对应的 runbook 吗？",
    make=_noknow_make,
    view=base_view,
    evidence=_noknow_ev,
    raw_path="$.no_evidence",
    wordings=(
        W(
            "en",
            'The knowledge lookup for "{topic}" found no relevant runbook.',
            ("query.text=topic", "total=0"),
            (
                "ent:topic",
                "neg:found no relevant runbook>found a relevant runbook",
                "sub:unsupported_conclusion:found no relevant runbook>found no relevant runbook, so no failover procedure exists",
            ),
            excerpt=None,
            claim_type="negative_observation",
        ),
        W(
            "zh",
            "知识库中未检索到与“{topic}”相关的 runbook。",
            ("query.text=topic", "total=0"),
            (
                "ent:topic",
                "neg:未检索到>检索到了",
                "sub:unsupported_conclusion:知识库中未检索到与“{topic}”相关的 runbook>该场景不需要任何 runbook",
            ),
            excerpt=None,
            claim_type="negative_observation",
        ),
    ),
)
