"""The llm roles' start-up check: loud logs, and the outcome in ``/metrics``."""

from __future__ import annotations

import logging

import pytest
from prometheus_client import generate_latest

from tracebound.llm import readiness
from tracebound.llm.probe_report import Check, ProbeReport
from tracebound.llm.settings import LLMSettings
from tracebound.runtime.metrics import ServiceMetrics

SETTINGS = LLMSettings.model_validate({"base_url": "http://127.0.0.1:9/v1"})
READY = ProbeReport("http://127.0.0.1:9/v1", "m", (Check("reachable", "ok", "answered"),))
MISCONFIGURED = ProbeReport(
    "http://127.0.0.1:9/v1",
    "m",
    (
        Check("reachable", "ok", "answered"),
        Check("tool_calling", "fail", "vLLM was started without automatic tool choice", "flags"),
    ),
)
DOWN = ProbeReport(
    "http://127.0.0.1:9/v1",
    "m",
    (Check("reachable", "fail", "could not connect", "start it", down=True),),
)


def scrape(role: str) -> str:
    """What the role's /metrics serves: its registry with the collectors its spec adds."""
    metrics = ServiceMetrics(role)
    metrics.registry.register(readiness.COLLECTOR)
    return generate_latest(metrics.registry).decode()


def test_a_misconfigured_endpoint_is_an_error_with_the_fix(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger="tracebound.llm.readiness"):
        readiness.start_check("executor", SETTINGS, lambda *_: MISCONFIGURED).join(10)
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert any("is MISCONFIGURED" in m for m in errors), errors
    assert any("tool_calling failed" in m and "fix: flags" in m for m in errors), errors
    text = scrape("executor")
    assert 'tracebound_llm_ready{role="executor"} 0.0' in text
    assert 'tracebound_llm_check_failed{check="tool_calling",role="executor"} 1.0' in text


def test_an_endpoint_that_is_down_is_a_warning_only(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="tracebound.llm.readiness"):
        readiness.start_check("planner", SETTINGS, lambda *_: DOWN).join(10)
    levels = {r.levelno for r in caplog.records if "planner" in r.getMessage()}
    assert levels == {logging.WARNING}
    assert readiness.report_for("planner") is DOWN


def test_a_ready_endpoint_sets_the_gauge(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="tracebound.llm.readiness"):
        readiness.start_check("verifier", SETTINGS, lambda *_: READY).join(10)
    assert any("ready for llm mode" in r.getMessage() for r in caplog.records)
    assert 'tracebound_llm_ready{role="verifier"} 1.0' in scrape("verifier")


def test_a_crashing_probe_never_stops_the_service(caplog: pytest.LogCaptureFixture) -> None:
    def boom(role: str, settings: LLMSettings) -> ProbeReport:
        raise RuntimeError("probe bug")

    readiness.start_check("composer", SETTINGS, boom).join(10)
    assert readiness.report_for("composer") is None
    assert 'tracebound_llm_ready{role="composer"} 0.0' in scrape("composer")


def test_each_role_is_held_only_to_what_it_uses() -> None:
    assert "tool_calling" not in readiness.startup_skips("executor")
    assert "json_mode" in readiness.startup_skips("executor")
    assert "tool_calling" in readiness.startup_skips("planner")
    assert "json_schema" in readiness.startup_skips("verifier")
    assert "max_tokens" not in readiness.startup_skips("verifier")  # every call sends it
