"""The report pages: escaped, with the transition matrix, changed runs and failed cases; routes."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from typing import Any

import pytest

from projections import reports
from projections.reports import ReportHead, StoredReport
from replay import cli as replay_cli
from replay.report import Report
from tests.unit.test_trace_assemble import HOSTILE
from tests.unit.test_trace_page import TOKEN, client_for, parsed
from tracebound.errors import InvalidInputError
from tracebound.pages import page_path
from web.report_page import compared_text, render_list, render_report, window_text

AT = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)


def _pipeline() -> StoredReport:
    head = ReportHead(
        7,
        "replay.pipeline",
        AT,
        {"source": "recorded events"},
        {
            "mode": "rules",
            "rule_set_version": "gk-2",
            "selection": {"since": "2026-12-01T09:00:00+00:00", "until": None, "run_ids": []},
        },
        {
            "runs": 3,
            "changed": 1,
            "verdict_transitions": {"PASS→PASS": 2, "PASS→REJECT": 1},
            "errors": 0,
        },
    )
    changed = {
        "run_id": "run-<b>1",
        "query": HOSTILE,
        "old": {"verdict": "PASS", "answer": "old answer"},
        "new": {"verdict": "REJECT", "answer": HOSTILE},
        "changed": True,
    }
    return StoredReport(head, 3, [changed])


def _eval() -> StoredReport:
    head = ReportHead(
        8,
        "eval",
        AT,
        {"suite": "evals/demo"},
        {"mode": "rules", "rule_set_version": "gk-2", "tools": "live demo environment"},
        {"cases": 2, "passed": 1, "failed": 1},
    )
    cases = [
        {
            "case_id": "bad-case",
            "passed": False,
            "reasons": [
                {"check": "verdict", "passed": True, "detail": "verdict PASS (expected PASS)"},
                {"check": "must_contain", "passed": False, "detail": f"answer lacks {HOSTILE}"},
            ],
            "run": {"verdict": "PASS"},
        },
        {"case_id": "good-case", "passed": True, "reasons": [], "run": {"verdict": "PASS"}},
    ]
    return StoredReport(head, 2, [], cases)


def _safe(page: str) -> None:
    tags = parsed(page)
    assert not {t for t, _ in tags.tags} & {"script", "img"}
    assert not any(k.startswith("on") for _, attrs in tags.tags for k in attrs)
    assert HOSTILE.replace("\x1b", "") in "".join(tags.text).replace("\x1b", "")


def test_a_replay_report_shows_the_matrix_and_changed_runs_escaped() -> None:
    page = render_report(_pipeline(), signed_in=False)
    _safe(page)
    assert "id='verdict_transitions'" in page
    assert "<td class='moved'>1</td>" in page and "<td class='same'>2</td>" in page
    assert "href='/runs/run-%3Cb%3E1'" in page  # the trace link, its id quoted
    assert "old answer" in page and "href='/reports'" in page


def test_an_eval_report_lists_failed_cases_first_with_the_failed_expectation() -> None:
    page = render_report(_eval(), signed_in=True)
    _safe(page)
    assert page.index("bad-case") < page.index("good-case")
    assert "<b>must_contain</b>" in page and "verdict PASS (expected PASS)" not in page
    assert "all 0 expectations held" in page
    assert "action='/logout'" in page


def test_the_list_names_what_was_compared_the_window_and_totals() -> None:
    heads = [_pipeline().head, _eval().head]
    page = render_list(heads, next_before=8, signed_in=False)
    assert "href='/reports/7'" in page and "href='/reports?before=8'" in page
    assert "1 of 3 changed" in page and "1 of 2 cases passed" in page
    assert (
        compared_text(heads[1])
        == "suite evals/demo · rules gk-2 · mode rules · tools live demo environment"
    )
    assert window_text(heads[0]).startswith("2026-12-01T09:00:00+00:00 – …")
    assert window_text(heads[1]) == "–"


def test_the_routes_need_the_token_and_refuse_odd_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    def fake_read(_conn: Any, report_id: int) -> StoredReport | None:
        return _eval() if report_id == 8 else None

    def fake_list(_conn: Any, before: int | None) -> tuple[list[ReportHead], int | None]:
        return [_pipeline().head], before

    monkeypatch.setattr(reports, "read_report", fake_read)
    monkeypatch.setattr(reports, "list_reports", fake_list)
    with client_for(monkeypatch, TOKEN) as client:
        assert client.get("/reports").status_code == 401
        assert client.get("/reports/8").status_code == 401
        auth = {"Authorization": f"Bearer {TOKEN}"}
        page = client.get("/reports/8", headers=auth)
        assert page.status_code == 200 and "bad-case" in page.text
        assert "script-src" not in page.headers["Content-Security-Policy"]
        for path in ("/reports/9", "/reports/0", "/reports/x1", "/reports/99999999999999999999"):
            assert client.get(path, headers=auth).status_code == 404, path
        assert "/reports?before=3" in client.get("/reports?before=3", headers=auth).text
        assert client.get("/reports?before=-1", headers=auth).status_code == 404


def test_open_tells_a_report_from_a_run() -> None:
    assert page_path("reports/42") == "/reports/42"
    assert page_path("/reports/42") == "/reports/42"
    assert page_path("reports") == "/reports"
    assert page_path("run-1:a") == "/runs/run-1%3Aa"
    assert page_path("42") == "/runs/42"  # a bare number is a run id
    for bad in ("reports/0", "reports/x", "a/b", ""):
        with pytest.raises(InvalidInputError):
            page_path(bad)


@pytest.mark.parametrize("as_json", [False, True])
def test_replay_and_eval_end_with_the_report_page(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], as_json: bool
) -> None:
    monkeypatch.setenv("TRACEBOUND_INGEST_PORT", "18123")
    monkeypatch.setattr(replay_cli, "store_report", lambda _report: 42)
    report = Report("eval", {"suite": "s"}, {"mode": "rules"}, {"cases": 0})
    args = argparse.Namespace(no_store=False, out=None, json=as_json)
    assert replay_cli._finish(report, args) == 0
    out, err = capsys.readouterr()
    line = "page  http://127.0.0.1:18123/reports/42"
    if as_json:  # stdout stays one JSON document
        assert json.loads(out)["kind"] == "eval" and "page http://127.0.0.1:18123/reports/42" in err
    else:
        assert out.rstrip().endswith(line)
    monkeypatch.setattr(replay_cli, "store_report", lambda _report: pytest.fail("stored"))
    assert replay_cli._finish(report, argparse.Namespace(no_store=True, out=None, json=False)) == 0
    assert "page" not in capsys.readouterr().out
