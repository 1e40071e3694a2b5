"""Alert runs on the real broker: the skill their alertname routes to, and answers that open
with the alerts; runbook knowledge arrives as labelled hypotheses and checks."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from services.ingest.alertmanager import AlertGroup, build_request
from tests.support.pipeline import answered
from tests.support.stack import StackHandle
from tracebound import topics
from tracebound.events import Alert, EvidenceProduced, PlanProduced
from tracebound.events.base import utcnow

DISK_CAUSE = "Possible cause from the runbook, not verified here: Binary logs or slow query logs"


def _alert(name: str, service: str, **annotations: str) -> Alert:
    started = (utcnow() - timedelta(minutes=20)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return Alert(
        status="firing",
        labels={"alertname": name, "service": service, "severity": "warning"},
        annotations=annotations,
        startsAt=started,
        fingerprint=f"{name}-{service}",
    )


def test_alerts_route_by_name_and_answers_open_with_them(
    stack: StackHandle, tmp_path: Path
) -> None:
    disk = _alert("HighDiskUsage", "mysql", value="91", threshold="85", unit="%")
    unknown = _alert("QueueBacklogGrowing", "checkout-service")
    asked = {
        "disk": build_request(AlertGroup("itest-disk", "itest", (disk,)), "en"),
        "unknown": build_request(AlertGroup("itest-unknown", "itest", (unknown,)), "zh"),
    }
    answers, seen = answered(stack, tmp_path, list(asked.values()), topics.PLANS, topics.EVIDENCE)
    chosen = {
        e.run_id: e.plan.planner_plan for e in seen[topics.PLANS] if isinstance(e, PlanProduced)
    }
    disk_plan = chosen[asked["disk"].run_id]
    assert disk_plan.selected_skill == "diagnose-high-disk-usage"
    assert disk_plan.selection_reason.startswith("alertname HighDiskUsage matches")
    unknown_plan = chosen[asked["unknown"].run_id]
    assert unknown_plan.selected_skill == "investigate-alert"
    assert unknown_plan.selection_reason == (
        "no skill matches alertname QueueBacklogGrowing: generic alert investigation"
    )
    disk_lines = answers[asked["disk"].run_id].user_facing_answer.splitlines()
    assert disk_lines[:2] == [
        "Alerts this answer is about:",
        f"- HighDiskUsage on mysql: value 91%, threshold 85%, firing since "
        f"{disk.startsAt.replace('T', ' ').replace('Z', ' UTC')}",
    ]
    zh_lines = answers[asked["unknown"].run_id].user_facing_answer.splitlines()
    assert zh_lines[0] == "本次回答针对的告警："
    assert zh_lines[1].startswith("- checkout-service 的 QueueBacklogGrowing：自 ")
    disk_rounds = [
        e
        for e in seen[topics.EVIDENCE]
        if isinstance(e, EvidenceProduced) and e.run_id == asked["disk"].run_id
    ]
    disk_round = disk_rounds[0]  # a retry round re-collects the same calls
    output = disk_round.executor_structured_output
    assert any(h.startswith(DISK_CAUSE) for h in output["hypotheses"]), output["hypotheses"]
    for line in (*output["hypotheses"], *output["recommended_actions"]):
        assert "\n" not in line and "- " not in line and "Symptoms" not in line
