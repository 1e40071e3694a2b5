"""How fast ``replay --stage gatekeeper --no-store`` re-judges recorded evidence.

In process, with the replay package's own functions: the recorded events are read
from ``tracebound.evidence`` and ``tracebound.gatekeeper-results`` (from ``since``,
normally the start of the bench's pipeline run, as ``--since`` would), then every
``EvidenceProduced`` is re-checked with the default rule set and compared with its
recorded result. The headline rate counts re-judged evidence events over the
whole command (read + re-judge); the two parts are reported separately.

:func:`pipeline` does the same for ``replay --stage pipeline`` (rules mode, tools
frozen from the recording) over a bounded number of recorded runs.
"""

from __future__ import annotations

import cProfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.report import dump_profiles
from replay.chain import Chain
from replay.cli import STAGE_TOPICS
from replay.compare import gatekeeper_report, pipeline_report
from replay.recorded import Selection, read_topics
from services.gatekeeper.handler import GatekeeperHandler
from services.gatekeeper.ruleset import default_ruleset
from tracebound.events import DiagnosisRequested
from tracebound.settings import KafkaSettings

PIPELINE_RUNS = 300  # runs re-run through the whole chain


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


def pipeline(kafka: KafkaSettings, since: datetime | None) -> dict[str, Any]:
    """``replay --stage pipeline --no-store`` over the first recorded runs; runs/s and events/s."""
    started = time.perf_counter()
    recording = read_topics(kafka, STAGE_TOPICS["pipeline"], Selection(since=since))
    read = time.perf_counter()
    requests = recording.of(DiagnosisRequested)[:PIPELINE_RUNS]
    selection = Selection(since=since, run_ids=frozenset(r.run_id for r in requests))
    events = sum(len(recording.for_run(r.run_id)) for r in requests)
    report = pipeline_report(recording, Chain.build({}), {}, selection)
    rerun = time.perf_counter()
    runs = len(requests)
    return {
        "recorded_events_read": len(recording.events),
        "read_seconds": round(read - started, 3),
        "read_events_per_second": round(len(recording.events) / (read - started), 1),
        "runs": runs,
        "run_events": events,
        "changed": int(report.summary.get("changed", 0)),
        "rerun_seconds": round(rerun - read, 3),
        "runs_per_second": round(runs / (rerun - read), 1) if rerun > read else 0.0,
        "run_events_per_second": round(events / (rerun - read), 1) if rerun > read else 0.0,
    }
