"""How fast ``replay --stage gatekeeper --no-store`` re-judges recorded evidence.

In process, with the replay package's own functions: the recorded events are read
from ``tracebound.evidence`` and ``tracebound.gatekeeper-results`` (from ``since``,
normally the start of the bench's pipeline run, as ``--since`` would), then every
``EvidenceProduced`` is re-checked with the default rule set and compared with its
recorded result. The headline rate counts re-judged evidence events over the
whole command (read + re-judge); the two parts are reported separately.
"""

from __future__ import annotations

import cProfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.report import dump_profiles
from replay.cli import STAGE_TOPICS
from replay.compare import gatekeeper_report
from replay.recorded import Selection, read_topics
from services.gatekeeper.handler import GatekeeperHandler
from services.gatekeeper.ruleset import default_ruleset
from tracebound.settings import KafkaSettings


def run(
    kafka: KafkaSettings, since: datetime | None, profile_to: Path | None = None
) -> dict[str, Any]:
    selection = Selection(since=since)
    started = time.perf_counter()
    recording = read_topics(kafka, STAGE_TOPICS["gatekeeper"], selection)
    read = time.perf_counter()
    handler = GatekeeperHandler(default_ruleset())
    profiler = cProfile.Profile() if profile_to is not None else None
    if profiler is not None:
        report = profiler.runcall(gatekeeper_report, recording, handler, selection)
    else:
        report = gatekeeper_report(recording, handler, selection)
    judged = time.perf_counter()
    if profiler is not None and profile_to is not None:
        dump_profiles([profiler], profile_to)
    inputs = int(report.summary["inputs"])
    total = judged - started
    return {
        "inputs": inputs,
        "recorded_events_read": len(recording.events),
        "changed": int(report.summary["changed"]),
        "read_seconds": round(read - started, 3),
        "judge_seconds": round(judged - read, 3),
        "events_per_second": round(inputs / total, 1) if total > 0 else 0.0,
        "judge_events_per_second": round(inputs / (judged - read), 1) if judged > read else 0.0,
    }
