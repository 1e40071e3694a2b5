"""Logged lines and a firing alert around the onset of :mod:`tests.support.series_items`."""

from __future__ import annotations

from datetime import UTC, datetime

from services.executor.log_lines import Logged
from tests.support.series_items import ONSET
from tracebound.events import Alert


def line(minutes: float, message: str, level: str = "ERROR") -> Logged:
    """A line logged ``minutes`` after the onset (before it when negative)."""
    return Logged(f"{minutes}: {message}", message, level, ONSET + minutes * 60)


def firing() -> Alert:
    """An alert firing since the onset."""
    return Alert(status="firing", startsAt=datetime.fromtimestamp(ONSET, UTC).isoformat())
