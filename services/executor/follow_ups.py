"""The calls that follow the planned ones, read from what those returned.

Both modes make them, in code, before any claim is written: the logs of when the
incident's first change began (:mod:`onset_logs`) and the state of the dependency
the failing calls go to (:mod:`dependency_hop`). A narrow task makes neither.
"""

from __future__ import annotations

from collections.abc import Sequence

from services.executor import diagnosis
from services.executor.dependency_hop import dependency_call
from services.executor.onset_logs import onset_call, trace_series
from tracebound.events import PlannedCall, ToolInvocation


def follow_up_calls(
    trace: Sequence[ToolInvocation], planned: Sequence[PlannedCall]
) -> list[PlannedCall]:
    """The follow-up calls the planned calls' answers ask for, in the order they run."""
    series = trace_series(trace)
    findings = diagnosis.evaluate(series)  # the rules, evaluated once for both
    calls = (
        onset_call(trace, planned, findings),
        dependency_call(trace, planned, series, findings),
    )
    return [c for c in calls if c is not None]
