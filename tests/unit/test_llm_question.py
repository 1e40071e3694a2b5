"""The question as a role's prompt shows it: an alert run's question without the summaries."""

from __future__ import annotations

import json

from bench.llm_tokens import counting_responder, run_cases
from bench.memory_tools import memory_tools
from replay.evals import EVALS_DIR, load_suite
from services.ingest.alertmanager import AlertGroup, alert_query
from tests.support.fake_openai import FakeOpenAI
from tracebound.events import Alert
from tracebound.llm import LLMSettings, OpenAIChatModel
from tracebound.llm.question import shown_question

CPU = Alert(
    status="firing",
    labels={"alertname": "HighCPUUsage", "service": "payment-service"},
    annotations={"summary": "CPU usage of payment-service is 92% (2 cores)"},
)
DISK = Alert(
    status="firing",
    labels={"alertname": "HighDiskUsage", "instance": "db-1"},
    annotations={"description": "disk of db-1 is 91% full"},
)


def test_an_alert_question_is_shown_without_the_summaries_it_quotes() -> None:
    query = alert_query(AlertGroup("g", "r", (CPU, DISK), 0))
    assert "(CPU usage of payment-service is 92% (2 cores))" in query
    shown = shown_question(query, (CPU, DISK))
    assert shown == "Diagnose firing alerts: HighCPUUsage on payment-service; HighDiskUsage on db-1"


def test_a_question_that_quotes_no_summary_is_shown_as_is() -> None:
    for query in ("payment-service 当前是否有 HighCPUUsage 告警？", "why is CPU high"):
        assert shown_question(query, (CPU, DISK)) == query
    assert shown_question("HighCPUUsage (see the runbook)", ()) == "HighCPUUsage (see the runbook)"


def test_every_role_shows_the_alert_run_question_without_the_summaries() -> None:
    [case] = [c for c in load_suite(EVALS_DIR / "demo") if c.id == "aiops-demo-alerts-en"]
    request = case.request_event().request
    shown = shown_question(request.query, request.alerts)
    assert len(shown) < len(request.query) / 2
    server = FakeOpenAI(responder=counting_responder(None, "SmolLM2-135M-Instruct"))
    with server:
        settings = LLMSettings(base_url=server.base_url, max_retries=0, startup_check=False)
        figures = run_cases(OpenAIChatModel(settings), [case], memory_tools())
    assert figures.verdicts == {case.id: "PASS"}
    roles = [r.messages[0]["content"].split(" of ", 1)[0] for r in server.requests]
    assert roles == [f"You are the {r}" for r in ("planner", "executor", "verifier", "composer")]
    for sent in server.requests:
        text = json.dumps(sent.messages, ensure_ascii=False)
        assert request.query not in text
        assert json.dumps(shown, ensure_ascii=False)[1:-1] in text
