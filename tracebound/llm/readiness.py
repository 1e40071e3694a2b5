"""The start-up check of a role in ``llm`` mode: probe once, say it loudly, expose it.

A misconfigured endpoint (no tool parser, a refused temperature, a wrong model
name) makes every model call fail, and the role then answers from its rules —
correctly, but never with the model. The check runs the start-up subset of the
probe (the basics plus what the role uses: tool calling for the executor, JSON
mode for the others) in a background thread, so a slow or absent server never delays the
service, logs each failed check with its fix (ERROR when the endpoint answers but
is misconfigured, WARNING when it is merely down: the role uses its rules until
it comes back) and keeps the outcome for ``/metrics``:
``tracebound_llm_ready{role}`` (1 when every required check passed, 0 while the
check runs or after a failure) and ``tracebound_llm_check_failed{role,check}``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from tracebound.llm.probe import STARTUP_SKIPS, probe_endpoint
from tracebound.llm.probe_report import ProbeReport
from tracebound.llm.settings import LLMSettings

log = logging.getLogger("tracebound.llm.readiness")

Prober = Callable[[str, LLMSettings], ProbeReport]

_lock = threading.Lock()
_reports: dict[str, ProbeReport | None] = {}  # role -> report, None while running


# What each role asks of the server beyond the basics: the executor calls tools, the
# other roles ask for JSON. A role is not held to a capability it never uses.
ROLE_NEEDS: dict[str, str] = {
    "executor": "tool_calling",
    "planner": "json_mode",
    "verifier": "json_mode",
    "composer": "json_mode",
}


def startup_skips(role: str) -> frozenset[str]:
    """The checks the start-up check of ``role`` leaves out."""
    need = ROLE_NEEDS.get(role)
    unneeded = set(ROLE_NEEDS.values()) - {need} if need else set()
    return STARTUP_SKIPS | unneeded


def _startup_probe(role: str, settings: LLMSettings) -> ProbeReport:
    return probe_endpoint(settings, skip=startup_skips(role))


def log_report(role: str, report: ProbeReport) -> None:
    """One line per failed check with its fix, or one line saying all is well (plus warnings)."""
    if report.ok:
        warned = [c.name for c in report.checks if c.status == "warn"]
        extra = f" (warnings: {', '.join(warned)})" if warned else ""
        log.info("%s: model endpoint %s ready for llm mode%s", role, report.target, extra)
        for check in report.checks:
            if check.status == "warn":
                log.warning(
                    "%s: llm check %s: %s; fix: %s", role, check.name, check.detail, check.fix
                )
        return
    if report.down:
        level, state = logging.WARNING, "is down: the role answers from rules until it is back"
    else:
        level, state = logging.ERROR, "is MISCONFIGURED: every llm call falls back to rules"
    log.log(
        level,
        "%s: model endpoint %s %s (run `tracebound doctor` for the full report)",
        role,
        report.target,
        state,
    )
    for check in report.failures:
        log.log(
            level, "%s: llm check %s failed: %s; fix: %s", role, check.name, check.detail, check.fix
        )


def _run(role: str, settings: LLMSettings, prober: Prober) -> None:
    try:
        report = prober(role, settings)
    except Exception:  # the check must never take the service down
        log.exception("%s: the model endpoint start-up check crashed", role)
        return
    with _lock:
        _reports[role] = report
    log_report(role, report)


def start_check(
    role: str, settings: LLMSettings, prober: Prober = _startup_probe
) -> threading.Thread:
    """Probe the endpoint in the background; the role starts without waiting."""
    with _lock:
        _reports[role] = None
    thread = threading.Thread(
        target=_run, args=(role, settings, prober), name=f"llm-check-{role}", daemon=True
    )
    thread.start()
    return thread


def report_for(role: str) -> ProbeReport | None:
    """The finished report of ``role``'s check, or None (not run, or still running)."""
    with _lock:
        return _reports.get(role)


class ReadinessCollector(Collector):
    """Reads the checks' outcomes at scrape time, so the gauge follows the thread."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        with _lock:
            reports = dict(_reports)
        if not reports:
            return
        ready = GaugeMetricFamily(
            "tracebound_llm_ready",
            "1 when the start-up check found the model endpoint usable for llm mode",
            labels=["role"],
        )
        failed = GaugeMetricFamily(
            "tracebound_llm_check_failed",
            "1 for each start-up check of the model endpoint that failed",
            labels=["role", "check"],
        )
        for role, report in sorted(reports.items()):
            ready.add_metric([role], 1.0 if report is not None and report.ok else 0.0)
            for check in report.failures if report is not None else ():
                failed.add_metric([role, check.name], 1.0)
        yield ready
        yield failed


COLLECTOR = ReadinessCollector()


__all__ = [
    "ROLE_NEEDS",
    "ReadinessCollector",
    "log_report",
    "report_for",
    "start_check",
    "startup_skips",
]
