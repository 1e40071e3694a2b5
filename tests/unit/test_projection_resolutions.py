"""Resolved alerts on their run: recorded in any order, never a stage, shown on the row."""

from __future__ import annotations

import random

from projections import runs
from tests.unit.test_projection_runs import RUN, fold, interleave, two_round_run
from tracebound.events import Alert, AlertsResolved, Event
from tracebound.events import Producer as ProducerRef


def resolved(*ends: tuple[str, str, str], event_id: str = "e900") -> AlertsResolved:
    """An ``AlertsResolved`` of ``(fingerprint, startsAt, endsAt)`` alerts of the run."""
    return AlertsResolved(
        run_id=RUN,
        event_id=event_id,
        producer=ProducerRef(service="ingest"),
        alerts=tuple(
            Alert(
                status="resolved",
                labels={"alertname": "HighCPUUsage", "service": "checkout"},
                startsAt=start,
                endsAt=end,
                fingerprint=fp,
            )
            for fp, start, end in ends
        ),
        requested_by="alertmanager:tracebound",
    )


FIRST = ("aa01", "2026-07-08T22:00:00Z", "2026-07-08T22:30:00.123456789Z")
SECOND = ("bb02", "2026-07-08T22:05:00Z", "2026-07-08T22:40:00Z")


def test_a_resolution_is_recorded_on_the_answered_run_without_changing_its_status() -> None:
    events: list[Event] = [*two_round_run("AIOPS"), resolved(FIRST)]
    row = runs.row(RUN, fold(events))
    assert row["status"] == "answered" and row["verdict"] == "PASS"
    assert row["resolved_at"] == "2026-07-08T22:30:00.123+00:00"
    assert row["resolved_alerts"] == [
        {
            "fingerprint": "aa01",
            "alertname": "HighCPUUsage",
            "labels": {"alertname": "HighCPUUsage", "service": "checkout"},
            "startsAt": "2026-07-08T22:00:00Z",
            "endsAt": "2026-07-08T22:30:00.123456789Z",
        }
    ]


def test_a_run_without_resolution_has_none() -> None:
    row = runs.row(RUN, fold(two_round_run("AIOPS")))
    assert row["resolved_at"] is None and row["resolved_alerts"] is None


def test_any_order_and_any_repeat_gives_the_same_row() -> None:
    events: list[Event] = [
        *two_round_run("AIOPS"),
        resolved(FIRST, event_id="e901"),
        resolved(SECOND, event_id="e902"),
        resolved(FIRST, event_id="e903"),  # Alertmanager re-sent the resolution
    ]
    expected = runs.row(RUN, fold(events))
    rng = random.Random(11)
    for _ in range(20):
        shuffled = interleave(events, rng)
        rng.shuffle(shuffled)
        assert runs.row(RUN, fold(shuffled)) == expected
    assert [a["fingerprint"] for a in expected["resolved_alerts"]] == ["aa01", "bb02"]
    assert expected["resolved_at"] == "2026-07-08T22:40:00.000+00:00"


def test_a_repeated_resolution_changes_nothing() -> None:
    state = fold([*two_round_run(), resolved(FIRST)])
    assert not runs.merge(state, resolved(FIRST, event_id="e999"))
