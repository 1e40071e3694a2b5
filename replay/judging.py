"""Re-judging recorded evidence, in this process or in one process per CPU core.

Why processes: a gatekeeper replay is CPU-bound (decoding and judging), and its
partition groups are independent (runs are co-partitioned, so an evidence event
and its recorded result are in the same group), so each group can be read and
judged by a worker process with its own consumer. The slice of history is taken
once, before the workers start, so every worker reads up to the same end offsets.
A worker hands back only the compared fields of each judged round, and the parent
takes the groups' results in group order, so the report is the one a single
process gives. Workers are forked (they inherit the parsed reader schemas) when
the slice's own Kafka client is already closed, and make their own; with one
group, or one worker, nothing is forked.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any

from projections.history import Slice
from replay.gate import GateGroup, Outcome, read_gate_group, readers
from replay.recorded import (
    Progress,
    Selection,
    partition_groups,
    quiet,
    reading_meter,
    replay_consumer,
)
from services.gatekeeper.check import Judgement, judge
from services.gatekeeper.ruleset import Ruleset
from tracebound.settings import KafkaSettings

PROGRESS_EVERY_S = 2.0
_read: Any = None  # a worker's shared count of messages read (a multiprocessing Value)


@dataclass(frozen=True, slots=True)
class Judged:
    """One re-judged evidence event: what identifies it, the recorded outcome and the new."""

    run_id: str
    event_id: str
    round: int
    old: Outcome | None
    new: Judgement


def judged(group: GateGroup, ruleset: Ruleset, selection: Selection) -> list[Judged]:
    """Every evidence event of ``group`` that ``selection`` keeps, judged by ``ruleset``."""
    return [
        Judged(
            evidence.run_id,
            evidence.event_id,
            evidence.round,
            old,
            judge(evidence.structured_output, evidence.invocations, ruleset),
        )
        for evidence, old in group.inputs()
        if selection.keeps(evidence)
    ]


def read_judged(
    kafka: KafkaSettings,
    topic_names: Iterable[str],
    selection: Selection,
    ruleset: Ruleset,
    *,
    progress: Progress = quiet,
    workers: int | None = None,
) -> Iterator[list[Judged]]:
    """Each partition group's judged evidence, in group order.

    ``workers`` processes (default one per CPU core, at most one per group) read and
    judge the groups; events read, events/s and the time left go to stderr unless
    ``progress`` is :func:`quiet`.
    """
    groups = partition_groups(kafka, topic_names, selection, progress)
    meter = reading_meter(groups, progress)
    count = min(workers or os.cpu_count() or 1, len(groups))
    if count <= 1:
        consumer = replay_consumer(kafka)
        try:
            for group in groups:
                gate = read_gate_group(kafka, group, selection, consumer, meter.add)
                yield judged(gate, ruleset, selection)
        finally:
            consumer.close()
        return
    readers()  # parsed once here, inherited by every worker
    context = multiprocessing.get_context("fork")
    read = context.Value("q", 0)
    with ProcessPoolExecutor(count, context, initializer=_share, initargs=(read,)) as pool:
        futures = [pool.submit(_judge, kafka, g, selection, ruleset) for g in groups]
        for future in futures:
            while True:
                try:
                    result: list[Judged] = future.result(timeout=PROGRESS_EVERY_S)
                    break
                except FutureTimeout:
                    meter.add(read.value - meter.done)
            meter.add(read.value - meter.done)
            yield result


def _share(read: Any) -> None:
    global _read  # noqa: PLW0603 - the worker's handle on the parent's counter
    _read = read


def _count(messages: int) -> None:
    with _read.get_lock():
        _read.value += messages


def _judge(kafka: KafkaSettings, group: Slice, selection: Selection, ruleset: Ruleset) -> Any:
    consumer = replay_consumer(kafka)
    try:
        gate = read_gate_group(kafka, group, selection, consumer, _count)
    finally:
        consumer.close()
    return judged(gate, ruleset, selection)
