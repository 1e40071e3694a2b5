"""A second log search, around the moment the incident's first change began.

Why: the planned log search returns the newest lines before the alert. The line
that explains an incident was often written when its first change began: a config
reload that switched the log level, an export that started, a session that
opened a transaction. That can be an hour before the alert, under thousands of
newer lines. The diagnosis rules that held name the series the cause rests on,
and their computed change points say when to look.

The search repeats the planned one (same topic, text and service) over a fixed
span around the earliest change point, so a replay of the same tool output asks
the same question.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from services.executor import diagnosis
from services.executor.diagnosis import Finding, Series
from services.executor.tools.logs import TOOL_NAME as LOG_TOOL
from services.executor.tools.query_prometheus import TOOL_NAME as SERIES_TOOL
from tracebound.events import PlannedCall, ToolInvocation

# the span searched: a few minutes before the change point (its cause) and one after
LEAD = timedelta(minutes=5)
TRAIL = timedelta(minutes=1)
LIMIT = 20
SPAN_PARAMS = ("start", "end")


def trace_series(trace: Sequence[ToolInvocation]) -> list[Series]:
    """Every answered ``query_prometheus`` series of the trace, keyed by its ref."""
    out: list[Series] = []
    for inv in trace:
        output = inv.output if isinstance(inv.output, Mapping) else {}
        items = output.get("series") if inv.tool_name == SERIES_TOOL and inv.success else None
        if isinstance(items, list):
            out.extend(
                Series((inv.source_invocation_id, f"$.series[{i}]"), item)
                for i, item in enumerate(items)
                if isinstance(item, Mapping)
            )
    return out


def trace_findings(trace: Sequence[ToolInvocation]) -> list[Finding]:
    """The diagnosis rules that hold on the trace's series, best supported first."""
    return diagnosis.evaluate(trace_series(trace))


def first_change(
    trace: Sequence[ToolInvocation], findings: Sequence[Finding] | None = None
) -> float | None:
    """When the earliest premise of a diagnosis rule that held began to change (epoch s)."""
    held = trace_findings(trace) if findings is None else findings
    moments = [
        began
        for finding in held
        for premise in finding.premises
        if (began := premise.value("change_began")) is not None
    ]
    return min(moments) if moments else None


def is_onset_search(params: Mapping[str, Any]) -> bool:
    """Whether a log call searched a fixed span (this module's search), not the last window."""
    return all(params.get(name) for name in SPAN_PARAMS)


def onset_call(
    trace: Sequence[ToolInvocation],
    calls: Sequence[PlannedCall],
    findings: Sequence[Finding] | None = None,
) -> PlannedCall | None:
    """The search around the first change, when a log search was planned and answered
    (``findings``: the rules that hold on ``trace``, when the caller has them)."""
    planned = next((c for c in calls if c.tool == LOG_TOOL), None)
    answered = any(inv.tool_name == LOG_TOOL and inv.success for inv in trace)
    if planned is None or not answered:
        return None
    began = first_change(trace, findings)
    if began is None:
        return None
    moment = datetime.fromtimestamp(began, UTC)
    base = planned.params if isinstance(planned.params, Mapping) else {}
    params: dict[str, Any] = {k: v for k, v in base.items() if k not in ("window_minutes", "limit")}
    params.update(start=(moment - LEAD).isoformat(), end=(moment + TRAIL).isoformat(), limit=LIMIT)
    return PlannedCall(tool=LOG_TOOL, params=params, purpose="logs when the first change began")
