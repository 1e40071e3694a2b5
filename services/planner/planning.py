"""Which tool calls a plan means: the planner derives them and records them on the plan.

A skill lists the steps of a full diagnosis. A narrow-scope question (contract
section 2.4) only asks to confirm one thing, so it gets only the calls that
confirm it — its alert, or its logs — and never runbook lookups, whose general
knowledge must not be stated as a fact of the current environment.

The result travels as ``PlanSnapshot.execution``, so the executor runs the
recorded calls. A plan recorded before plans carried them still names them when
the rules planner wrote it: each of its lines is one call (:func:`describe`), read
back by :func:`described_calls`. Only a model-written legacy plan is derived
again, by the executor, from the skill catalogue it has.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from datetime import datetime, timedelta

from services.executor.tools import PARAMS_MODELS
from services.planner.routing import firing
from services.planner.scope import Focus
from services.planner.skills import (
    ALERT_PLACEHOLDER,
    SERVICE_PLACEHOLDER,
    WINDOW_PLACEHOLDER,
    Skill,
)
from tracebound.events import (
    Alert,
    DiagnosisRequest,
    ExecutionPlan,
    PlannedCall,
    PlanSnapshot,
)
from tracebound.events.records import EPOCH
from tracebound.llm.fallback import FALLBACK, RULES
from tracebound.rfc3339 import parse_time

RULES_MODES = frozenset({RULES, FALLBACK})
# How far before the alert's startsAt an ``{alert_window}`` log search reaches.
WINDOW_LEAD = timedelta(minutes=60)
MAX_WINDOW_MINUTES = 1440


def describe(call: PlannedCall) -> str:
    """One line of ``planner_plan.plan``."""
    shown = json.dumps(call.params, ensure_ascii=False, sort_keys=True)
    return f"{call.tool} {shown}: {call.purpose}"


def _read_line(line: str) -> PlannedCall | None:
    tool, _space, rest = line.partition(" ")
    try:
        params, end = json.JSONDecoder().raw_decode(rest)
    except ValueError:
        return None
    if tool not in PARAMS_MODELS or not isinstance(params, dict) or rest[end : end + 2] != ": ":
        return None
    return PlannedCall(tool=tool, params=params, purpose=rest[end + 2 :])


def described_calls(plan: PlanSnapshot) -> tuple[PlannedCall, ...] | None:
    """The calls a legacy rules plan's lines name; None when any line is not one."""
    if plan.planner_mode not in RULES_MODES or not plan.planner_plan.plan:
        return None
    calls = []
    for line in plan.planner_plan.plan:
        call = _read_line(line)
        if call is None:
            return None
        calls.append(call)
    return tuple(calls)


def _skill_calls(skill: Skill, values: dict[str, str | int | None]) -> list[PlannedCall]:
    return [
        PlannedCall(tool=step.tool, params=params, purpose=step.purpose)
        for step, params in skill.calls(values)
    ]


def _alert_calls(focus: Focus, request: DiagnosisRequest) -> list[PlannedCall]:
    """One metrics call per alert the request names (firing input alerts first)."""
    pairs: list[tuple[str | None, str | None]] = []
    for alert in request.alerts:
        if alert.status == "firing":
            pairs.append((alert.labels.get("alertname"), alert.labels.get("service")))
    named = {name for name, _service in pairs}
    pairs += [(name, focus.service) for name in focus.alert_names if name not in named]
    if not pairs:
        pairs.append((None, focus.service))
    calls = []
    for name, service in dict.fromkeys(pairs):
        params = {k: v for k, v in (("alert_name", name), ("service", service)) if v}
        purpose = "confirm the alert and its figures"
        calls.append(PlannedCall(tool="query_metrics", params=params, purpose=purpose))
    return calls


def _default_calls(focus: Focus) -> list[PlannedCall]:
    service = focus.service
    metrics = {"service": service} if service else {}
    calls = [PlannedCall(tool="query_metrics", params=metrics, purpose="alerts")]
    if service:
        logs = {"log_topic": "application-logs", "query": service, "service": service}
        calls.append(
            PlannedCall(tool="query_logs", params=logs, purpose="recent logs of the service")
        )
    knowledge = {"query": focus.text[:200]}
    calls.append(PlannedCall(tool="lookup_knowledge", params=knowledge, purpose="runbook guidance"))
    return calls


def _trigger(skill: Skill, request: DiagnosisRequest) -> Alert | None:
    """The input alert a skill is about: the first it knows by name or label, any for fallback."""
    alerts = firing(request)
    for alert in alerts:
        if skill.knows_alert(alert.labels.get("alertname", "")):
            return alert
    for alert in alerts:
        if skill.label_match(alert.labels):
            return alert
    return alerts[0] if alerts and skill.fallback else None


def _parse_time(text: str) -> datetime | None:
    moment = parse_time(text)
    return moment if moment is not None and moment > EPOCH else None


def alert_window(alert: Alert, requested_at: datetime) -> int | None:
    """Minutes from ``WINDOW_LEAD`` before the alert's startsAt until the request."""
    started = _parse_time(alert.startsAt)
    if started is None or requested_at <= EPOCH:
        return None
    minutes = math.ceil((requested_at - started + WINDOW_LEAD).total_seconds() / 60)
    return min(max(minutes, 1), MAX_WINDOW_MINUTES)


def _step_values(
    skill: Skill, focus: Focus, request: DiagnosisRequest
) -> dict[str, str | int | None]:
    """Placeholder values: from the input alert that chose the skill, else from the question."""
    alert = _trigger(skill, request)
    if alert is None:
        return {SERVICE_PLACEHOLDER: focus.service}
    return {
        SERVICE_PLACEHOLDER: alert.labels.get("service") or focus.service,
        ALERT_PLACEHOLDER: alert.labels.get("alertname"),
        WINDOW_PLACEHOLDER: alert_window(alert, request.requested_at),
    }


def _dedupe(calls: Iterable[PlannedCall]) -> list[PlannedCall]:
    seen: set[str] = set()
    unique = []
    for call in calls:
        key = call.tool + json.dumps(call.params, sort_keys=True)
        if key not in seen:
            seen.add(key)
            unique.append(call)
    return unique


def planned_calls(
    focus: Focus, skill: Skill | None, request: DiagnosisRequest, narrow: bool
) -> list[PlannedCall]:
    """The calls a plan stands for, in order."""
    full = (
        _skill_calls(skill, _step_values(skill, focus, request)) if skill else _default_calls(focus)
    )
    if not narrow:
        if request.mode == "AIOPS":
            full = _alert_calls(focus, request) + full
        return _dedupe(full)
    calls: list[PlannedCall] = []
    if focus.asks_alerts or not focus.asks_logs:
        calls += _alert_calls(focus, request)
    if focus.asks_logs:
        logs = [c for c in full if c.tool == "query_logs"][:1]
        if not logs and focus.service:
            params = {"log_topic": "application-logs", "query": focus.service}
            logs = [PlannedCall(tool="query_logs", params=params, purpose="logs of the service")]
        calls += logs
    return _dedupe(calls)


def execution_plan(
    focus: Focus, skill: Skill | None, request: DiagnosisRequest, narrow: bool
) -> ExecutionPlan:
    """What the executor runs for this plan: its calls and the entities claims keep to."""
    return ExecutionPlan(
        calls=tuple(planned_calls(focus, skill, request, narrow)),
        services=focus.services,
        alert_names=focus.alert_names,
    )
