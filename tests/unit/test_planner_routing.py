"""Skill routing: alertname, then labels, then the generic investigation; keywords for questions."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from services.planner import skills as skills_module
from services.planner.llm_planner import PlannerReply, _chosen, _offered
from services.planner.routing import select
from services.planner.rules_planner import plan_rules
from services.planner.skills import Skill, SkillStep, Triggers, load_skills
from tracebound.events import Alert, DiagnosisRequest

NOW = datetime(2026, 5, 4, 10, 30, tzinfo=UTC)


@pytest.fixture(autouse=True)
def fresh_cache() -> Iterator[None]:
    skills_module.clear_cache()
    yield
    skills_module.clear_cache()


def alert(name: str, service: str, **labels: str) -> Alert:
    return Alert(
        status="firing",
        labels={"alertname": name, "service": service, **labels},
        startsAt="2026-05-04T10:00:00Z",
    )


def aiops(*alerts: Alert) -> DiagnosisRequest:
    described = "; ".join(f"{a.labels['alertname']} on {a.labels['service']}" for a in alerts)
    return DiagnosisRequest(
        mode="AIOPS",
        query=f"Diagnose firing alerts: {described}",
        alerts=alerts,
        requested_at=NOW,
    )


def chat(question: str) -> DiagnosisRequest:
    return DiagnosisRequest(mode="CHAT", query=question, language="zh", requested_at=NOW)


def test_disk_alert_on_mysql_goes_to_the_disk_skill_not_the_pool_skill() -> None:
    snapshot, skill = plan_rules(aiops(alert("HighDiskUsage", "mysql")), load_skills())
    assert skill is not None and skill.name == "diagnose-high-disk-usage"
    reason = snapshot.planner_plan.selection_reason
    assert "alertname HighDiskUsage" in reason and "mysql" not in reason
    assert snapshot.execution is not None
    tools = [c.tool for c in snapshot.execution.calls]
    assert tools == ["query_metrics", "query_logs", "query_prometheus", "lookup_knowledge"]
    logs = snapshot.execution.calls[1].params
    # 30 minutes since startsAt plus the 15-minute lead
    assert logs["service"] == "mysql" and logs["window_minutes"] == 90


def test_unknown_alert_gets_the_generic_investigation() -> None:
    request = aiops(alert("QueueBacklogGrowing", "checkout-service"))
    snapshot, skill = plan_rules(request, load_skills())
    assert skill is not None and skill.name == "investigate-alert"
    assert snapshot.planner_plan.selection_reason == (
        "no skill matches alertname QueueBacklogGrowing: generic alert investigation"
    )
    assert snapshot.execution is not None
    calls = {c.tool: c.params for c in snapshot.execution.calls}
    assert calls["query_metrics"] == {
        "alert_name": "QueueBacklogGrowing",
        "service": "checkout-service",
    }
    assert calls["query_logs"]["service"] == "checkout-service"
    assert calls["lookup_knowledge"]["alert_name"] == "QueueBacklogGrowing"


def test_generic_investigation_is_never_chosen_for_a_question() -> None:
    selection = select(load_skills(), chat("what time is it"))
    assert selection.skill is None and selection.basis == "none"


@pytest.mark.parametrize(
    ("question", "expected", "hit"),
    [
        (
            "payment-service 当前是否有 HighCPUUsage 告警？",
            "diagnose-high-cpu",
            "alertname HighCPUUsage",
        ),
        (
            "inventory-service 是否有 HikariCP 连接池耗尽日志",
            "diagnose-mysql-connection-pool",
            "keyword 连接池",
        ),
        ("order-service 内存使用率为什么这么高", "diagnose-high-memory", "keyword 内存"),
        ("user-service 接口响应慢，P99 很高", "diagnose-slow-response", "keyword 响应慢"),
        ("payment-service 有没有 Redis 超时", "diagnose-redis-timeout", "keyword redis"),
        ("mysql 磁盘满了吗", "diagnose-high-disk-usage", "keyword 磁盘"),
        (
            "is mysql refusing connections from the pool?",
            "diagnose-mysql-connection-pool",
            "keyword mysql",
        ),
    ],
)
def test_question_keywords_still_route(question: str, expected: str, hit: str) -> None:
    selection = select(load_skills(), chat(question))
    assert selection.skill is not None and selection.skill.name == expected
    assert selection.basis == "question" and hit in selection.reason


def step() -> SkillStep:
    return SkillStep(tool="query_metrics", params={"service": "{service}"}, purpose="p")


def made(name: str, **triggers: Any) -> Skill:
    return Skill(
        name=name,
        version=f"{name}-v1",
        description="d",
        triggers=Triggers(**triggers),
        steps=(step(),),
    )


def test_precedence_alertname_then_label_then_fallback() -> None:
    by_label = made("a-label", labels=("component=database",), keywords=("disk",))
    by_name = made("b-name", alerts=("DiskAlmostFull",))
    generic = made("z-generic").model_copy(update={"fallback": True})
    skills = [by_label, by_name, generic]
    labelled = alert("DiskAlmostFull", "db", component="database")
    assert select(skills, aiops(labelled)).skill is by_name
    other = alert("Other", "db", component="Database")
    chosen = select(skills, aiops(other))
    assert chosen.skill is by_label and chosen.reason.startswith("label component=database")
    plain = alert("Other", "disk-service")  # "disk" in the service name is no keyword hit
    assert select(skills, aiops(plain)).skill is generic
    # an alert name in a question outweighs any number of keywords
    question = chat("disk disk DiskAlmostFull")
    assert select(skills[:2], question).skill is by_name


def test_llm_planner_keeps_alert_routing() -> None:
    skills = load_skills()
    routed = select(skills, aiops(alert("HighDiskUsage", "mysql")))
    reply = PlannerReply(
        selected_skill="diagnose-mysql-connection-pool", selection_reason="mysql", plan=["x"]
    )
    skill, reason = _chosen(reply, skills, routed)
    assert skill is not None and skill.name == "diagnose-high-disk-usage"
    assert "alert routing kept" in reason
    question = select(skills, chat("mysql 连接池"))
    reply = PlannerReply(selected_skill="diagnose-slow-response", selection_reason="r", plan=["x"])
    skill, reason = _chosen(reply, skills, question)
    assert skill is not None and skill.name == "diagnose-slow-response" and reason == "r"


def test_llm_planner_is_offered_only_the_skill_the_alerts_decided() -> None:
    skills = load_skills()
    routed = select(skills, aiops(alert("HighDiskUsage", "mysql")))
    assert [s.name for s in _offered(skills, routed)] == ["diagnose-high-disk-usage"]
    question = select(skills, chat("mysql 连接池"))
    assert list(_offered(skills, question)) == list(skills)


def test_generic_investigation_without_a_service_skips_the_service_logs() -> None:
    bare = Alert(status="firing", labels={"alertname": "Watchdog"}, startsAt="2026-05-04T10:00:00Z")
    snapshot, skill = plan_rules(aiops_bare(bare), load_skills())
    assert skill is not None and skill.fallback
    assert snapshot.execution is not None
    tools = [c.tool for c in snapshot.execution.calls]
    assert tools == ["query_metrics", "query_prometheus", "lookup_knowledge"]


def aiops_bare(alert: Alert) -> DiagnosisRequest:
    return DiagnosisRequest(mode="AIOPS", query="Diagnose firing alerts: Watchdog", alerts=(alert,))


def test_the_log_window_reads_alertmanager_nanosecond_start_times() -> None:
    from datetime import UTC, datetime

    from services.planner.planning import alert_window

    alert = Alert(status="firing", labels={"alertname": "X"}, startsAt="2026-05-04T10:00:00.5Z")
    nanos = alert.model_copy(update={"startsAt": "2026-05-04T10:00:00.512345678Z"})
    asked = datetime(2026, 5, 4, 10, 30, tzinfo=UTC)
    assert alert_window(nanos, asked) == alert_window(alert, asked) == 90
