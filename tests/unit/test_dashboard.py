"""The runs dashboard: its numbers, pictures and page, and the sign-in that guards it."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from starlette.testclient import TestClient

from projections import dashboard, run_list
from projections.dashboard import RunDetails, Summary, summarize
from projections.views import RunList, RunSummary
from tests.unit.test_trace_assemble import HOSTILE
from tests.unit.test_trace_page import client_for, parsed
from web import charts, live
from web.dash_page import DashView, render_dashboard
from web.http import SIGN_IN_COOKIE, cookie_matches

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
TOKEN = "dash-token with; odd=chars"


def _row(i: int, verdict: str | None, latency: int | None, mode: str = "llm") -> dict[str, Any]:
    at = T0 + timedelta(minutes=i)
    stamp = at.isoformat()
    later = (at + timedelta(milliseconds=300)).isoformat()
    return {
        "requested_at": at,
        "verdict": verdict,
        "status": "answered" if latency is not None else "gated",
        "latency_ms": latency,
        "timings": {"request": {"first": stamp, "last": stamp}, "plan": {"last": later}},
        "verifier_mode": mode,
    }


def test_summary_counts_percentiles_buckets_and_stages() -> None:
    rows = [_row(i, "PASS" if i % 2 else "REJECT", 10 * (i + 1)) for i in range(100)]
    rows.append(_row(100, None, None, mode="rules-fallback"))
    rows[3]["fallback_roles"] = 2  # the planner and the composer answered from rules
    s = summarize({"PASS": 50, "REJECT": 50, "none": 1}, rows)
    assert s.total == 101 and s.sampled == 101
    assert s.percentiles == {50: 500, 95: 950, 99: 990}
    assert (s.fallbacks, s.judged, s.unfinished, s.answered) == (2, 101, 1, 100)
    assert s.bucket_width == timedelta(minutes=5)
    assert sum(sum(b.verdicts.values()) for b in s.buckets) == 101
    assert s.buckets[0].verdicts == {"REJECT": 3, "PASS": 2}
    assert s.stages == [("plan", 300.0, 101)]
    assert summarize({}, []).buckets == [] and summarize({}, []).percentiles == {}


def test_charts_are_well_formed_svg_with_text_escaped() -> None:
    hostile = HOSTILE.replace("\x1b", "")  # a control character XML cannot hold at all
    bars = [(T0, {"PASS": 3, "REJECT": 1}), (T0 + timedelta(hours=1), {"none": 2})]
    pictures = [
        charts.verdict_bars(bars, timedelta(hours=1), hostile),
        charts.latency_histogram([5, 50, 500], {50: 50, 95: 500, 99: 500}, "latency"),
        charts.share_bars([(hostile, 1, 4)], "shares"),
        charts.stage_bars([("plan", 120.0, 4), (hostile, 30.0, 4)], "stages"),
        charts.latency_histogram([], {}, "nothing"),
    ]
    for svg in pictures:
        root = ET.fromstring(svg)
        assert root.tag.endswith("svg")
        assert not [
            e for e in root.iter() if not e.tag.endswith(("svg", "title", "text", "rect", "line"))
        ]
    assert "<script>" not in "".join(pictures)
    assert "p95 500 ms" in pictures[1] and "no runs to draw" in pictures[4]


def _summary(n: int) -> RunSummary:
    fields = {k: None for k in RunSummary.model_fields}
    return RunSummary.model_validate(
        fields
        | {
            "run_id": f"run-{n}",
            "status": "answered",
            "round": 1,
            "verdict": "PASS",
            "query": HOSTILE,
            "requested_at": "2026-12-01T10:00:00Z",
            "latency_ms": 1500,
        }
    )


def _view(params: dict[str, str], signed_in: bool = False) -> DashView:
    details = {
        "run-1": RunDetails(HOSTILE, "payment-service", 2, "m<1>", "rules-1", "rules-fallback")
    }
    page = RunList(runs=[_summary(1), _summary(2)], next_cursor="abc_-")
    rows = [_row(i, "PASS", 100 + i) for i in range(3)]
    return DashView(params, page, details, summarize({"PASS": 3}, rows), signed_in)


def test_the_page_escapes_every_value_and_links_only_to_this_server() -> None:
    page = render_dashboard(_view({"verdict": "PASS", "q": "a&b <x>", "cursor": "old"}))
    tags = parsed(page)
    names = {t for t, _ in tags.tags}
    assert "img" not in names
    # the one script is this server's file, never inline
    assert [a for t, a in tags.tags if t == "script"] == [{"src": live.PATH, "defer": None}]
    assert page.count("<script") == 1
    assert not any(k.startswith("on") for _, attrs in tags.tags for k in attrs)
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "".join(tags.text).count("<script>alert('x')</script>") == 2  # alert name and query
    hrefs = [a["href"] or "" for t, a in tags.tags if t == "a"]
    assert all(h.startswith("/") and not h.startswith("//") for h in hrefs)
    assert "/runs/run-1" in hrefs and "/runs/run-2" in hrefs
    [after] = [a["href"] for t, a in tags.tags if t == "a" and a.get("id") == "next-page"]
    assert parse_qs(urlsplit(after or "").query) == {
        "verdict": ["PASS"],
        "q": ["a&b <x>"],
        "cursor": ["abc_-"],
    }
    assert [a["href"] for t, a in tags.tags if a.get("id") == "first-page"] == [
        "/?verdict=PASS&q=a%26b+%3Cx%3E"
    ]
    inputs = {a["name"]: a.get("value") for t, a in tags.tags if t == "input"}
    assert inputs["q"] == "a&b <x>"
    assert "rules-fallback" in page and "1.50 s" in page
    assert "forget token" not in page and "forget token" in render_dashboard(_view({}, True))


def test_the_dead_letter_rate_sits_beside_the_fallback_share() -> None:
    view = _view({})
    view = replace(view, summary=replace(view.summary, dead_letters=6))
    page = render_dashboard(view)
    assert "dead letters / runs" in page and "200.0% (6/3)" in page
    assert "/reports" in [a["href"] for t, a in parsed(page).tags if t == "a"]


def test_an_empty_selection_says_so() -> None:
    view = DashView({}, RunList(runs=[], next_cursor=None), {}, Summary(0, {}, 0))
    page = render_dashboard(view)
    assert "No run matches these filters." in page and "no runs to draw" in page


def test_new_filters_parse_and_refuse() -> None:
    chosen = run_list.parse_filter({"mode": "AIOPS", "skill": "cpu-diagnosis", "q": " 50% _x "})
    assert (chosen.mode, chosen.skill, chosen.text) == ("AIOPS", "cpu-diagnosis", "50% _x")
    for params, name in (
        ({"mode": "BATCH"}, "mode"),
        ({"skill": "a b"}, "skill"),
        ({"q": "x" * 201}, "q"),
    ):
        with pytest.raises(run_list.FilterError) as caught:
            run_list.parse_filter(params)
        assert caught.value.param == name
    _where, values = run_list.filter_clause(chosen)
    assert values == ["AIOPS", "cpu-diagnosis", "%50\\% \\_x%"]
    assert run_list.filter_clause(run_list.RunFilter())[1] == []


def _client(monkeypatch: pytest.MonkeyPatch, token: str | None) -> TestClient:
    """The trace page's test client, with the dashboard's reads replaced too."""

    def fake_list(_conn: Any, selection: run_list.RunFilter) -> RunList:
        assert selection.limit == 50  # the page's own size, whatever the query says
        return RunList(runs=[_summary(1)], next_cursor=None)

    client = client_for(monkeypatch, token)
    monkeypatch.setattr(dashboard, "list_runs_filtered", fake_list)
    monkeypatch.setattr(dashboard, "page_details", lambda _c, _ids: {})
    monkeypatch.setattr(dashboard, "read_summary", lambda _c, _s: summarize({"PASS": 1}, []))
    return client


def test_sign_in_trades_the_token_for_a_strict_cookie(monkeypatch: pytest.MonkeyPatch) -> None:
    with _client(monkeypatch, TOKEN) as client:
        refused = client.get("/")
        assert refused.status_code == 401 and "action='/login'" in refused.text
        assert "form-action 'self'" in refused.headers["Content-Security-Policy"]
        wrong = client.post("/login", data={"token": "guess"}, follow_redirects=False)
        assert wrong.status_code == 401 and SIGN_IN_COOKIE not in wrong.cookies
        assert client.post("/login", content=b"token=" + b"x" * 5000).status_code == 413
        signed = client.post("/login", data={"token": TOKEN}, follow_redirects=False)
        assert signed.status_code == 303 and signed.headers["location"] == "/"
        cookie = signed.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie
        assert TOKEN not in cookie
        assert cookie_matches(cookie.split(";", 1)[0].encode(), TOKEN.encode())
        page = client.get("/")  # the client sends the cookie back
        assert page.status_code == 200 and "forget token" in page.text
        policy = page.headers["Content-Security-Policy"]
        assert "default-src 'none'" in policy and "script-src 'self'" in policy
        assert "unsafe-inline" not in policy.split("script-src", 1)[1]
        script = client.get(live.PATH)  # no data in it: served without the token
        assert script.status_code == 200 and "javascript" in script.headers["content-type"]
        assert "DOMParser" in script.text and "innerHTML" not in script.text
        assert client.get("/api/v1/runs").status_code == 200  # the API takes the cookie too
        assert client.get("/runs/run-1").status_code == 200  # the trace page takes it too
        left = client.post("/logout", follow_redirects=False)
        assert left.status_code == 303 and SIGN_IN_COOKIE not in client.cookies
        assert client.get("/").status_code == 401
        headers = {"Authorization": f"Bearer {TOKEN}"}
        assert client.get("/", headers=headers).status_code == 200


def test_routes_without_a_token(monkeypatch: pytest.MonkeyPatch) -> None:
    with _client(monkeypatch, None) as client:
        moved = client.get("/runs?verdict=PASS&mode=CHAT", follow_redirects=False)
        assert moved.status_code == 308 and moved.headers["location"] == "/?verdict=PASS&mode=CHAT"
        page = client.get("/", params={"verdict": "PASS", "skill": "", "limit": "500"})
        assert page.status_code == 200 and "Server-Timing" in page.headers
        bad = client.get("/", params={"since": "yesterday"})
        assert bad.status_code == 400 and "since" in bad.text
        assert client.get("/login", follow_redirects=False).status_code == 303


def test_the_stacks_roles_show_with_the_reason_one_is_down_or_stuck() -> None:
    roles = (
        ("planner", "running", ""),
        ("composer", "down", "composer is down: OverflowError: date value out of range"),
        ("executor", "stuck", "executor is stuck: 5 aborts or retries in a row"),
    )
    view = DashView({}, RunList(runs=[], next_cursor=None), {}, Summary(0, {}, 0), roles=roles)
    page = render_dashboard(view)
    assert "planner running" in page and "composer down" in page and "executor stuck" in page
    assert "composer is down: OverflowError: date value out of range" in page
    assert "id='roles'" not in render_dashboard(
        DashView({}, RunList(runs=[], next_cursor=None), {}, Summary(0, {}, 0))
    )
