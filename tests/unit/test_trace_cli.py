"""The terminal view of a trace and the ``tracebound trace`` command."""

from __future__ import annotations

import json
import webbrowser

import pytest

from projections import trace, trace_cli
from projections.views import Trace
from tests.unit.test_trace_assemble import HOSTILE, sample_rows, sample_trace
from tracebound.cli import build_parser
from tracebound.errors import InvalidInputError
from web.trace_page import render_page


def test_sections_in_reading_order() -> None:
    text = trace_cli.render_text(sample_trace())
    heads = [line.split()[0] for line in text.splitlines() if line and not line[0].isspace()]
    assert heads[:6] == ["RUN", "CLAIMS", "GATEKEEPER", "VERIFIER", "ANSWER", "TIMINGS"]
    assert "[SUPPORTED] claim-1 (observation)   gatekeeper PASS" in text
    assert "[NOT_ENOUGH_INFO] claim-2 (observation)   gatekeeper BACK-FILLED" in text
    assert "[REFUTED] claim-3 (observation)   gatekeeper FAIL" in text
    assert "binding 0: query_metrics invocation 11 $.alerts[0]   gatekeeper PASS" in text
    assert "executor cited invocation - -" in text
    assert "recorded: none (no_ref)" in text
    assert "HikariPool-1 - pool exhausted" in text
    assert "guard VIOLATED   (answer replaced)" in text
    assert "tokens     42 (prompt 30, completion 12)" in text
    assert "tokens 42 [budget 7100/7168 tokens, cut: tool result c1 cut]" in text
    assert " ok supported via prometheus (http://prom.test:9090) " in text
    assert " ok supported via - " in text  # recorded before backends were
    assert "chosen     matched" in text


def test_control_characters_cannot_reach_the_terminal() -> None:
    text = trace_cli.render_text(sample_trace())
    assert "\x1b" not in text and "\\x1b[31mred" in text
    assert trace_cli.clean("a\x07b\x9bc\nd\te") == "a\\x07b\\x9bc\nd\te"
    assert trace_cli.clean(None) == "-" and trace_cli.clean({"b": 1}) == '{"b": 1}'
    assert HOSTILE.split("\x1b")[0] in text  # the rest of the text is shown as it is


def _run(monkeypatch: pytest.MonkeyPatch, argv: list[str], found: Trace | None) -> int:
    class Conn:
        def __enter__(self) -> Conn:
            return self

        def __exit__(self, *exc: object) -> None:
            return None

    monkeypatch.setattr(trace_cli, "connect", lambda _settings: Conn())
    monkeypatch.setattr(trace, "build_trace", lambda _conn, _run_id: found)
    args = build_parser().parse_args(argv)
    result: int = args.handler(args)
    return result


def test_json_is_the_trace_document(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    t = trace.assemble_trace(*sample_rows())
    assert _run(monkeypatch, ["trace", "run-1", "--json"], t) == 0
    assert json.loads(capsys.readouterr().out) == sample_trace()


def test_unknown_run_is_one_line_and_exit_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(monkeypatch, ["trace", "run-404"], None) == 1
    out = capsys.readouterr()
    assert out.out == "" and out.err == "tracebound: no run run-404 in the read model\n"


def test_a_run_answered_from_rules_says_which_role_fell_back_and_why() -> None:
    run, invocations, steps = sample_rows()
    evaluation = run["self_evaluation"]["verifier_evaluation"]
    evaluation["verifier_mode"] = "rules-fallback"
    evaluation["fallbacks"] = [
        {"role": "planner", "kind": "invalid_output", "reason": "plan: field required"},
        {"role": "verifier", "kind": "http_status", "reason": "HTTP 400 (temperature)"},
    ]
    t = trace.assemble_trace(run, invocations, steps).document()
    assert [f["role"] for f in t["run"]["fallbacks"]] == ["planner", "verifier"]
    text = trace_cli.render_text(t)
    assert "fallback   planner: rules fallback because: invalid_output: plan: field" in text
    assert "fallback   verifier: rules fallback because: http_status: HTTP 400" in text
    page = render_page(t)
    assert "verifier rules fallback because <b>http_status: HTTP 400 (temperature)</b>" in page
    assert sample_trace()["run"]["fallbacks"] == []  # a run recorded without any


def test_the_text_form_ends_with_the_page_url(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TRACEBOUND_INGEST_HOST", "0.0.0.0")
    monkeypatch.setenv("TRACEBOUND_INGEST_PORT", "9123")
    t = trace.assemble_trace(*sample_rows())
    assert _run(monkeypatch, ["trace", "run-1"], t) == 0
    assert capsys.readouterr().out.endswith("\npage  http://127.0.0.1:9123/runs/run-1\n")


def test_open_prints_the_url_and_hands_it_to_the_browser(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    opened: list[str] = []
    monkeypatch.setattr(webbrowser, "open", opened.append)
    monkeypatch.setenv("TRACEBOUND_INGEST_HOST", "::1")
    monkeypatch.setenv("TRACEBOUND_INGEST_PORT", "8088")  # whatever the shell says
    args = build_parser().parse_args(["open", "run-1"])
    assert args.handler(args) == 0
    assert opened == ["http://[::1]:8088/runs/run-1"]
    assert capsys.readouterr().out == "http://[::1]:8088/runs/run-1\n"
    bad = build_parser().parse_args(["open", "../etc"])
    with pytest.raises(InvalidInputError):
        bad.handler(bad)
