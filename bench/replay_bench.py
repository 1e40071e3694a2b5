"""How fast ``replay --stage gatekeeper --no-store`` re-judges recorded evidence.

In process, with the replay package's own functions: the recorded events are read
from ``tracebound.evidence`` and ``tracebound.gatekeeper-results`` (from ``since``,
normally the start of the bench's pipeline run, as ``--since`` would), one partition
group at a time, and every ``EvidenceProduced`` is re-checked with the default rule
set and compared with its recorded result. The headline rate counts re-judged
evidence events over the whole command (read + re-judge); the time spent reading
(waiting on the group reader) and judging are reported separately. Both figures run
with the garbage-collector settings the command uses (:mod:`tracebound.collector`).

:func:`pipeline` does the same for ``replay --stage pipeline`` (rules mode, tools
frozen from the recording): one pass reads every recorded event of the pipeline's
topics (the read rate) and picks the first recorded runs, then those runs are
replayed as ``--run`` ids would be; the re-run rate leaves out the time spent
reading, and the whole command's time is reported beside it.
"""

from __future__ import annotations

import cProfile
import os
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, Generic, TypeVar

from bench.report import dump_profiles
from replay.chain import Chain
from replay.cli import STAGE_TOPICS
from replay.compare import gatekeeper_comparison, pipeline_report
from replay.gate import read_gate_group
from replay.judging import judged, read_judged
from replay.recorded import (
    Recording,
    Selection,
    partition_groups,
    quiet,
    read_groups,
    replay_consumer,
)
from services.gatekeeper.ruleset import Ruleset, default_ruleset
from tracebound.collector import tuned_collector
from tracebound.events import DiagnosisRequested
from tracebound.settings import KafkaSettings

G = TypeVar("G")
PIPELINE_RUNS = 300  # runs re-run through the whole chain


class _Timed(Generic[G]):
    """The groups of a read, with the time spent waiting for them and their sizes."""

    def __init__(self, groups: Iterable[G], size: Callable[[G], int]) -> None:
        self._groups = iter(groups)
        self._size = size
        self.seconds = 0.0
        self.events = 0

    def __iter__(self) -> Iterator[G]:
        while True:
            started = time.perf_counter()
            group = next(self._groups, None)
            self.seconds += time.perf_counter() - started
            if group is None:
                return
            self.events += self._size(group)
            yield group
            del group  # let it go before the next one is read, as the replay does


def _events(group: Recording) -> int:
    return len(group.events)


def run(
    kafka: KafkaSettings, since: datetime | None, profile_to: Path | None = None
) -> dict[str, Any]:
    """The command as it runs (a worker process per core), then once in this process."""
    selection = Selection(since=since)
    ruleset = default_ruleset()
    topics = STAGE_TOPICS["gatekeeper"]
    with tuned_collector():
        started = time.perf_counter()
        report = gatekeeper_comparison(read_judged(kafka, topics, selection, ruleset), ruleset)
        total = time.perf_counter() - started
        profiler = cProfile.Profile() if profile_to is not None else None
        if profiler is not None:
            single = profiler.runcall(_in_process, kafka, selection, ruleset)
        else:
            single = _in_process(kafka, selection, ruleset)
    if profiler is not None and profile_to is not None:
        dump_profiles([profiler], profile_to)
    inputs = int(report.summary["inputs"])
    return {
        "inputs": inputs,
        "changed": int(report.summary["changed"]),
        "workers": min(os.cpu_count() or 1, single["groups"]),
        "seconds": round(total, 3),
        "events_per_second": round(inputs / total, 1) if total > 0 else 0.0,
        "one_process": single,
        "judge_events_per_second": single["judge_events_per_second"],
    }


def _in_process(kafka: KafkaSettings, selection: Selection, ruleset: Ruleset) -> dict[str, Any]:
    """One process, one group at a time: the time spent reading (and decoding) and judging."""
    started = time.perf_counter()
    groups = partition_groups(kafka, STAGE_TOPICS["gatekeeper"], selection, quiet)
    consumer = replay_consumer(kafka)
    read = judge = 0.0
    inputs = events = 0
    try:
        for group in groups:
            begun = time.perf_counter()
            gate = read_gate_group(kafka, group, selection, consumer, _ignore)
            read_at = time.perf_counter()
            inputs += len(judged(gate, ruleset, selection))
            judge += time.perf_counter() - read_at
            read += read_at - begun
            events += len(gate.evidence) + len(gate.outcomes)
    finally:
        consumer.close()
    total = time.perf_counter() - started
    return {
        "groups": len(groups),
        "recorded_events_read": events,
        "seconds": round(total, 3),
        "read_seconds": round(read, 3),
        "judge_seconds": round(judge, 3),
        "events_per_second": round(inputs / total, 1) if total > 0 else 0.0,
        "judge_events_per_second": round(inputs / judge, 1) if judge > 0 else 0.0,
    }


def _ignore(_count: int) -> None:
    """No progress in the bench."""


def pipeline(kafka: KafkaSettings, since: datetime | None) -> dict[str, Any]:
    """``replay --stage pipeline --no-store`` over the first recorded runs; runs/s and events/s."""
    topics = STAGE_TOPICS["pipeline"]
    with tuned_collector():
        return _pipeline(kafka, topics, since)


def _pipeline(
    kafka: KafkaSettings, topics: tuple[str, ...], since: datetime | None
) -> dict[str, Any]:
    started = time.perf_counter()
    chosen: list[str] = []
    read_events = 0
    for group in read_groups(kafka, topics, Selection(since=since)):
        read_events += len(group.events)
        room = PIPELINE_RUNS - len(chosen)
        chosen += [e.run_id for e in group.of(DiagnosisRequested)[: max(room, 0)]]
    read = time.perf_counter()
    selection = Selection(since=since, run_ids=frozenset(chosen))
    groups = _Timed(read_groups(kafka, topics, selection), _events)
    report = pipeline_report(groups, Chain.build({}), {}, selection)
    rerun = time.perf_counter()
    runs, seconds = int(report.summary["runs"]), rerun - read - groups.seconds
    return {
        "recorded_events_read": read_events,
        "read_seconds": round(read - started, 3),
        "read_events_per_second": round(read_events / (read - started), 1),
        "runs": runs,
        "run_events": groups.events,
        "changed": int(report.summary.get("changed", 0)),
        "command_seconds": round(rerun - read, 3),  # read + re-run of the chosen runs
        "rerun_seconds": round(seconds, 3),
        "runs_per_second": round(runs / seconds, 1) if seconds > 0 else 0.0,
        "run_events_per_second": round(groups.events / seconds, 1) if seconds > 0 else 0.0,
    }
