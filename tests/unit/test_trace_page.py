"""The trace page: escaped, self-contained, coloured by outcome; its routes and their refusals."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import UTC, datetime
from html.parser import HTMLParser
from typing import Any

import pytest
from pydantic import SecretStr
from starlette.testclient import TestClient

from projections import run_list, trace
from projections.trace_cli import render_text
from projections.views import RunList, Trace
from services.ingest.runs import RunBuffer
from services.ingest.settings import IngestSettings
from tests.unit.test_ingest_http import NoDedup, NoPublisher
from tests.unit.test_trace_assemble import HOSTILE, sample_rows, sample_trace
from web import trace_page, trace_routes
from web.app import Ports, create_app
from web.html import render_message

TOKEN = "page-token"


class Tags(HTMLParser):
    """Every start tag and attribute the browser would see."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parsed(page: str) -> Tags:
    tags = Tags()
    tags.feed(page)
    return tags


def test_untrusted_text_is_escaped_everywhere() -> None:
    page = trace_page.render_page(sample_trace())
    tags = parsed(page)
    names = {t for t, _ in tags.tags}
    assert "script" not in names and "img" not in names
    assert not any(k.startswith("on") for _, attrs in tags.tags for k in attrs)
    assert "<script>" not in page and "&lt;script&gt;" in page
    # the hostile text reads back intact as text
    assert "<script>alert('x')</script>" in "".join(tags.text)


def test_page_is_self_contained() -> None:
    page = trace_page.render_page(sample_trace())
    attrs = {k for _, a in parsed(page).tags for k in a}
    assert not attrs & {"src", "href", "action", "srcset", "poster"}
    assert "@import" not in page and "url(" not in page
    # a URL appears only as shown text (a tool's recorded backend), never as a resource
    shown = "".join(parsed(page).text)
    for scheme in ("http://", "https://"):
        assert page.count(scheme) == shown.count(scheme)
    assert "prometheus (http://prom.test:9090)" in shown


def test_rows_are_coloured_by_outcome() -> None:
    page = trace_page.render_page(sample_trace())
    assert '<span class="badge good">SUPPORTED</span>' in page
    assert '<span class="badge bad">REFUTED</span>' in page
    assert '<span class="badge warn">NOT_ENOUGH_INFO</span>' in page
    assert '<span class="badge warn">backfilled</span>' in page
    assert '<span class="badge bad">fail</span>' in page
    assert "<section class='card bad'>" in page  # the refuted claim
    assert "recorded ref text (tool invocation)" in page
    assert "HikariPool-1 - pool exhausted" in page
    assert "executor cited" in page  # the back-filled binding shows what the executor said
    assert "answer replaced by guard" in page


def test_message_page_escapes_too() -> None:
    page = render_message("404", HOSTILE)
    assert "<script>" not in page and "&lt;script&gt;" in page


@contextlib.contextmanager
def _no_connection() -> Iterator[Any]:
    yield object()


def client_for(monkeypatch: pytest.MonkeyPatch, token: str | None) -> TestClient:
    known = trace.assemble_trace(*sample_rows())

    def fake_build(_conn: Any, run_id: str) -> Trace | None:
        return known if run_id == "run-1" else None

    def fake_list(_conn: Any, selection: run_list.RunFilter) -> RunList:
        return RunList(runs=[], next_cursor=f"limit {selection.limit}")

    monkeypatch.setattr(trace, "build_trace", fake_build)
    monkeypatch.setattr(run_list, "list_runs_filtered", fake_list)
    monkeypatch.setattr(trace_routes, "default_connect", lambda *_a: _no_connection)
    settings = IngestSettings(token=SecretStr(token) if token else None)
    app = create_app(settings, Ports(publisher=NoPublisher(), dedup=NoDedup(), runs=RunBuffer()))
    return TestClient(app, base_url="http://127.0.0.1")


def test_routes_need_the_token(monkeypatch: pytest.MonkeyPatch) -> None:
    with client_for(monkeypatch, TOKEN) as client:
        for path in ("/api/v1/runs", "/api/v1/runs/run-1/trace", "/runs/run-1"):
            reply = client.get(path)
            assert reply.status_code == 401, path
            assert reply.headers["WWW-Authenticate"].startswith("Bearer")
            assert client.get(path, headers={"Authorization": "Bearer wrong"}).status_code == 401
        auth = {"Authorization": f"Bearer {TOKEN}"}
        page = client.get("/runs/run-1", headers=auth)
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert "default-src 'none'" in page.headers["Content-Security-Policy"]
        assert (
            client.get("/api/v1/runs/run-1/trace", headers=auth).json()["run"]["run_id"] == "run-1"
        )


def test_unknown_runs_and_bad_parameters(monkeypatch: pytest.MonkeyPatch) -> None:
    with client_for(monkeypatch, None) as client:
        missing = client.get("/api/v1/runs/nope/trace")
        assert missing.status_code == 404 and "nope" in missing.json()["error"]
        assert client.get("/runs/nope").status_code == 404
        assert client.get("/api/v1/runs/bad%20id/trace").status_code == 422
        assert client.get("/runs/%3Cscript%3E").status_code == 404
        bad = client.get("/api/v1/runs", params={"verdict": "MAYBE"})
        assert bad.status_code == 400
        assert bad.json()["detail"] == [
            {"loc": ["query", "verdict"], "msg": "must be one of PASS, LOW_CONFID, REJECT"}
        ]
        assert client.get("/api/v1/runs", params={"limit": "-1"}).status_code == 400
        ok = client.get("/api/v1/runs", params={"verdict": "PASS", "limit": "7"})
        assert ok.status_code == 200 and ok.json() == {"runs": [], "next_cursor": "limit 7"}


def test_resolved_alerts_show_on_the_page_and_in_the_text_trace() -> None:
    run, invocations, steps = sample_rows()
    alert = {
        "fingerprint": "5b1e7c3a9d0f2468",
        "alertname": "<b>HighCPUUsage</b>",
        "labels": {"alertname": "<b>HighCPUUsage</b>", "service": "checkout"},
        "startsAt": "2026-07-08T22:45:00Z",
        "endsAt": "2026-07-08T23:40:00.5Z",
    }
    ended = datetime(2026, 7, 8, 23, 40, 0, 500000, tzinfo=UTC)
    run = {**run, "resolved_at": ended, "resolved_alerts": [alert]}
    document = trace.assemble_trace(run, invocations, steps).document()
    assert document["run"]["resolved_at"] == "2026-07-08T23:40:00.500+00:00"
    assert document["run"]["resolved_alerts"] == [alert]
    page = trace_page.render_page(document)
    assert "Resolved alerts (1)" in page and "&lt;b&gt;HighCPUUsage" in page
    assert "resolved 2026-07-08T23:40:00.5Z" in page
    assert "ended 2026-07-08T23:40:00.5Z" in render_text(document)
    unresolved = trace_page.render_page(sample_trace())
    assert "Resolved alerts" not in unresolved


def test_a_repair_step_is_marked_in_the_document_the_page_and_the_text_trace() -> None:
    run, invocations, [step] = sample_rows()
    first = {**step, "model_input": 'tool[call_1]: {"source_invocation_id": 11}'}
    repair = {
        **step,
        "event_id": "step-2",
        "step_index": 1,
        "has_tool_call": False,
        "model_input": "user: repair: the gatekeeper would reject your answer",
    }
    document = trace.assemble_trace(run, invocations, [first, repair]).document()
    assert [s["repair"] for s in document["agent_steps"]] == [False, True]
    rows = trace_page.render_page(document).split("Agent steps and tokens", 1)[1]
    assert rows.count(">repair</span>") == 1
    text = render_text(document)
    assert "chat_executor#1 repair m" in text and "chat_executor#0 repair" not in text


def test_a_step_cut_at_the_reply_limit_and_a_trimmed_prompt_show_on_the_page_and_text() -> None:
    run, invocations, [step] = sample_rows()
    cut = {
        **step,
        "finish_reason": "length",
        "model_input": "[budget 7900/8192 tokens, cut: query_logs lines 40-200] system: ...",
    }
    document = trace.assemble_trace(run, invocations, [cut]).document()
    [row] = document["agent_steps"]
    assert row["budget"] == "budget 7900/8192 tokens, cut: query_logs lines 40-200"
    section = trace_page.render_page(document).split("Agent steps and tokens", 1)[1]
    assert "<th>finish</th>" in section and ">length</span>" in section
    assert "cut: query_logs lines 40-200" in section
    text = render_text(document)
    assert "finish length" in text and "[budget 7900/8192 tokens" in text
