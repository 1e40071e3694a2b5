"""Resolved alerts on the run they resolve: the ``AlertsResolved`` part of a run's state.

The ingest publishes an ``AlertsResolved`` event keyed by the run whose incident
ended. It is a fact about the run, not a stage: it never changes the run's
status, and it may arrive before or after the answer. Like the rest of the merge
state (:mod:`projections.runs`) the part kept here is a join: alerts are kept by
incident (fingerprint and ``startsAt``) with the latest ``endsAt`` seen, so the
same events in any order, any number of times, give the same row.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from projections.run_state import RunState
from tracebound.codec.documents import EventDoc
from tracebound.rfc3339 import parse_time

SLOT = "resolved"


def _moment(text: str) -> datetime | None:
    """``endsAt`` as a time; None when unreadable or outside the readable window."""
    return parse_time(text)


def _entry(alert: dict[str, Any]) -> dict[str, Any]:
    return {
        "fingerprint": alert["fingerprint"],
        "alertname": alert["labels"].get("alertname", ""),
        "labels": dict(alert["labels"]),
        "startsAt": alert["startsAt"],
        "endsAt": alert["endsAt"],
    }


def merge(state: RunState, event: EventDoc) -> bool:
    """Fold an ``AlertsResolved`` into ``state`` in place; returns whether it changed."""
    if event.name != "AlertsResolved":
        return False
    entries = ((f"{a['fingerprint']}@{a['startsAt']}", _entry(a)) for a in event.data["alerts"])
    return _keep(state, entries)


def join(state: RunState, other: dict[str, dict[str, Any]]) -> bool:
    """Join another state's part (``other[SLOT]``) into ``state``; whether it changed."""
    return _keep(state, other.items())


def _keep(state: RunState, entries: Iterable[tuple[str, dict[str, Any]]]) -> bool:
    """Keep each entry that outranks the one held for its incident; whether any did."""
    held: dict[str, dict[str, Any]] = state.setdefault(SLOT, {})
    changed = False
    for key, entry in entries:
        known = held.get(key)
        if known is None or _rank(entry) > _rank(known):
            held[key] = entry
            changed = True
    return changed


def _rank(entry: dict[str, Any]) -> tuple[str, str]:
    """A total order of two reports of one incident: the later end, then the content."""
    return entry["endsAt"], json.dumps(entry, sort_keys=True)


def columns(state: RunState) -> dict[str, Any]:
    """``resolved_alerts`` (by ``endsAt``) and ``resolved_at`` (the latest ``endsAt``)."""
    held = state.get(SLOT) or {}
    alerts = sorted(held.values(), key=lambda a: (a["endsAt"], a["fingerprint"], a["startsAt"]))
    ends = [m for m in (_moment(a["endsAt"]) for a in alerts) if m is not None]
    return {
        "resolved_at": max(ends).isoformat(timespec="milliseconds") if ends else None,
        "resolved_alerts": alerts or None,
    }
