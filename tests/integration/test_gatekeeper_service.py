"""The gatekeeper process on the real broker: EvidenceProduced in, GatekeeperResult out."""

from __future__ import annotations

import copy
import signal
import subprocess
import sys

from tests.support import demo_evidence
from tests.support.evidence_events import evidence_event
from tests.support.kafka_io import REPO, Collector, produce_events
from tests.support.stack import StackHandle
from tracebound import topics
from tracebound.events import GatekeeperResult


def test_gatekeeper_service_end_to_end(stack: StackHandle) -> None:
    good = demo_evidence.scenarios()[0]
    forged = copy.deepcopy(good.structured_output)
    forged["claims"][0]["evidence_bindings"][0]["evidence_excerpt"] = (
        "HighCPUUsage, service=payment-service, state=firing, current=29%"
    )
    passing = evidence_event(good.structured_output, good.tool_invocations)
    failing = evidence_event(forged, good.tool_invocations)
    out = Collector(stack.kafka, topics.GATEKEEPER_RESULTS)
    proc = subprocess.Popen(
        [sys.executable, "-m", "services.gatekeeper"],
        cwd=REPO,
        env=stack.env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        produce_events(stack.kafka, topics.EVIDENCE, [passing, failing])
        wanted = {passing.run_id, failing.run_id}

        def ours() -> dict[str, GatekeeperResult]:
            return {
                e.run_id: e
                for e in out.events
                if isinstance(e, GatekeeperResult) and e.run_id in wanted
            }

        out.wait_until(lambda _events: len(ours()) == 2, timeout=120)
        results = ours()
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0, "the gatekeeper must exit cleanly on SIGTERM"
        out.close()
    assert set(results) == wanted
    ok, bad = results[passing.run_id], results[failing.run_id]
    assert ok.causation_id == passing.event_id
    assert (ok.gatekeeper_result.status, ok.gatekeeper_result.severity) == ("pass", "none")
    assert ok.gatekeeper_result.rule_set_version == "gatekeeper-rules-v3"
    assert ok.gatekeeper_result.checked_bindings[0].matched_text
    assert (bad.gatekeeper_result.status, bad.gatekeeper_result.severity) == ("fail", "reject")
    assert "evidence.excerpt_supported" in bad.gatekeeper_result.failed_rules
