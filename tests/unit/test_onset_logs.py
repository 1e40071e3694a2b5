"""The log search around the first change: when it runs, what span it asks, which lines it keeps."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from services.executor.claims import build_evidence
from services.executor.log_lines import near_change
from services.executor.onset_logs import first_change, onset_call
from services.executor.tools.logs import QueryLogsParams, to_log_query
from tests.support.evidence_events import answered_invocation
from tests.support.series_items import START, STEP, item
from tracebound.events import ExecutionPlan, PlannedCall, ToolInvocation

DROP = 200  # the sample where the free space starts to fall
LOGS = {"log_topic": "application-logs", "query": "gw", "service": "gw", "window_minutes": 70}


def _series(filling: bool) -> ToolInvocation:
    free = item(
        lambda i: 0.4 if i < DROP or not filling else 0.4 - 0.008 * (i - DROP),
        "ratio",
        "fs_free_ratio",
        mountpoint="/var/log",
    )
    return answered_invocation(
        1, "query_prometheus", {"queries": "disk"}, {"series": [free]}, ["$.series[0]"]
    )


def _logs(inv_id: int, params: dict[str, Any], lines: list[tuple[float, str]]) -> ToolInvocation:
    records = [
        {
            "timestamp": datetime.fromtimestamp(t, UTC).isoformat(),
            "level": "INFO",
            "service": "gw",
            "message": text,
        }
        for t, text in lines
    ]
    paths = [f"$.logs[{i}]" for i in range(len(records))]
    return answered_invocation(inv_id, "query_logs", params, {"logs": records}, paths)


def _plan(*calls: str) -> ExecutionPlan:
    params = {"query_logs": LOGS, "query_prometheus": {"queries": "disk"}}
    return ExecutionPlan(
        calls=tuple(PlannedCall(tool=c, params=params[c], purpose="") for c in calls),
        services=("gw",),
        alert_names=(),
    )


def test_the_search_spans_the_minutes_around_the_first_premise_change() -> None:
    trace = [_series(filling=True), _logs(2, LOGS, [(START, "started")])]
    began = first_change(trace)
    assert began is not None and abs(began - (START + DROP * STEP)) <= 5 * STEP
    call = onset_call(trace, _plan("query_prometheus", "query_logs").calls)
    assert call is not None and call.tool == "query_logs"
    params = QueryLogsParams.model_validate(call.params)
    assert params.query == "gw" and params.service == "gw"
    assert params.start == datetime.fromtimestamp(began, UTC) - timedelta(minutes=5)
    assert params.end == datetime.fromtimestamp(began, UTC) + timedelta(minutes=1)
    span = to_log_query(params).bounds(datetime.now(UTC))
    assert span == (params.start, params.end)


def test_no_search_without_a_rule_that_held_or_a_planned_answered_log_search() -> None:
    calls = _plan("query_prometheus", "query_logs").calls
    logs = _logs(2, LOGS, [(START, "started")])
    assert onset_call([_series(filling=False), logs], calls) is None
    assert onset_call([_series(filling=True)], _plan("query_prometheus").calls) is None
    failed = logs.model_copy(update={"success": False})
    assert onset_call([_series(filling=True), failed], calls) is None


@pytest.mark.parametrize(
    "span",
    [
        {"start": "2026-12-05T14:00:00Z"},
        {"start": "2026-12-05T14:00:00Z", "end": "2026-12-05T13:00:00Z"},
        {"start": "2026-12-05T14:00:00Z", "end": "2026-12-07T14:00:00Z"},
    ],
)
def test_a_span_needs_both_ends_in_order_and_at_most_a_day(span: dict[str, str]) -> None:
    with pytest.raises(ValidationError):
        QueryLogsParams.model_validate({"query": "gw", **span})


def test_new_messages_come_first_earliest_first_and_known_ones_after() -> None:
    def line(minute: int, text: str) -> dict[str, Any]:
        return {"claim_text": f"At 2026-12-05 13:{minute:02d}:00, gw logged INFO: {text}"}

    said = [line(59, "upstream pick 10.0.0.4")]
    onset = [line(17, "upstream pick 10.0.0.3"), line(16, "config reloaded"), line(15, "x")]
    times = {c["claim_text"]: float(i) for i, c in enumerate(reversed(onset))}
    kept = [c["claim_text"].split(": ", 1)[1] for c in near_change(onset, times, said)]
    assert kept == ["x", "config reloaded"]


def test_the_answer_states_the_lines_written_when_the_change_began() -> None:
    began = START + DROP * STEP
    said = ["GET /v1/catalog", "upstream pick", "rotated access.log", "cache warm", "gc pause"]
    recent = _logs(2, LOGS, [(began + 600 + i, text) for i, text in enumerate(said)])
    span = {**LOGS, "start": "s", "end": "e"}
    onset = _logs(3, span, [(began - 40, "config reloaded: log.level info -> debug")])
    empty = answered_invocation(4, "query_logs", span, {"logs": []}, [])
    plan = _plan("query_prometheus", "query_logs")
    out = build_evidence(
        [_series(filling=True), recent, onset, empty], plan, "en", narrow=False, max_claims=16
    )
    texts = [c["claim_text"].split("INFO: ")[-1].strip('"') for c in out["claims"]]
    # the series, the first three recent lines, the line of the onset, the other recent lines
    assert texts[1:] == [*said[:3], "config reloaded: log.level info -> debug", *said[3:]]
    assert not any(c["claim_type"] == "negative_observation" for c in out["claims"])


def _stated(recent: ToolInvocation, onset: ToolInvocation, max_claims: int) -> list[str]:
    plan = _plan("query_prometheus", "query_logs")
    trace = [_series(filling=True), recent, onset]
    out = build_evidence(trace, plan, "en", narrow=False, max_claims=max_claims)
    return [c["claim_text"] for c in out["claims"]]


def test_a_line_both_searches_returned_is_stated_once() -> None:
    began = START + DROP * STEP
    both = (began - 40, "config reloaded: log.level info -> debug")
    recent = _logs(2, LOGS, [both, (began + 600, "GET /v1/catalog")])
    onset = _logs(3, {**LOGS, "start": "s", "end": "e"}, [both])
    texts = _stated(recent, onset, 16)
    assert len(texts) == len(set(texts))
    assert sum("config reloaded" in t for t in texts) == 1
    # with more recent lines than an answer keeps, it still comes right after the first three
    many = [(began + 600 + i, f"GET /v1/item/{i} took {i} ms") for i in range(3)]
    many += [(began + 700 + i, f"routine {i}") for i in range(12)]
    texts = _stated(_logs(2, LOGS, [both, *many]), onset, 8)
    assert "config reloaded" in texts[4], texts
