"""``tracebound publish`` refusals and the ingest's place in the stack (no broker needed)."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from services.ingest.demo import DEMO_QUESTIONS, demo_webhook
from services.ingest.models import AlertmanagerWebhook
from tracebound.cli import main
from tracebound.settings import KafkaSettings
from tracebound.stack.lag import Lag, group_lag
from tracebound.stack.services import ROLE_INPUTS


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("{oops", "not JSON"),
        ('{"status": "firing", "receiver": "r"}', "alerts: Field required"),
        ('{"status": "firing", "receiver": "r", "alerts": []}', "alerts"),
        ("42", "expected an Alertmanager webhook"),
    ],
)
def test_publish_refuses_invalid_files_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, reason: str
) -> None:
    path = tmp_path / "alerts.json"
    path.write_text(content, encoding="utf-8")
    assert main(["publish", str(path)]) == 2
    err = capsys.readouterr().err
    assert reason in err and len(err.strip().splitlines()) == 1


def test_publish_of_a_missing_file_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["publish", "/nonexistent/alerts.json"]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_publish_reads_stdin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"[{}]")))
    assert main(["publish", "-"]) == 2
    assert "labels" in capsys.readouterr().err


def test_resolved_only_files_publish_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = Path(__file__).resolve().parents[1] / "fixtures/alertmanager/resolved_group.json"
    assert main(["publish", str(path), "--json"]) == 0
    assert capsys.readouterr().out.strip() == '{"runs": [], "resolved": 2}'


def test_the_ingest_is_a_stack_service_without_lag() -> None:
    assert ROLE_INPUTS["ingest"] == ()
    unreachable = KafkaSettings(bootstrap_servers="127.0.0.1:1")
    assert group_lag(unreachable, "ingest", ()) == Lag(0, exact=True)


def test_demo_webhook_is_one_valid_firing_group_of_the_demo_alerts() -> None:
    payload = AlertmanagerWebhook.model_validate(demo_webhook())
    assert payload.status == "firing"
    assert {a.labels["alertname"]: a.labels["service"] for a in payload.alerts} == {
        "HighCPUUsage": "payment-service",
        "HighMemoryUsage": "order-service",
        "SlowResponse": "user-service",
    }
    assert len({a.fingerprint for a in payload.alerts}) == 3
    assert "payment-service 当前是否有 HighCPUUsage 告警？" in DEMO_QUESTIONS
    assert any("order-service" in q and "memory" in q for q in DEMO_QUESTIONS)
