"""Reading a window of the event topics back, for the benchmark's accounting."""

from __future__ import annotations

import contextlib
import time
import uuid
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from confluent_kafka import Consumer, KafkaError, TopicPartition

from bench.report import log
from projections.rebuild import end_offsets
from tracebound.codec import make_codec
from tracebound.errors import PoisonInput
from tracebound.events import AgentStep, Event, ToolInvoked
from tracebound.runtime.fetch import next_batch
from tracebound.settings import KafkaSettings

READ_TIMEOUT_S = 120.0
Offsets = dict[tuple[str, int], int]


def _consumer(kafka: KafkaSettings) -> Any:
    return Consumer(
        {
            **kafka.client_config(),
            "group.id": f"tracebound-bench-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": "false",
            "enable.auto.offset.store": "false",
            "isolation.level": "read_committed",
            "enable.partition.eof": "true",
        }
    )


def watermarks(kafka: KafkaSettings, names: Sequence[str]) -> Offsets:
    """High watermark of every partition of ``names``."""
    return end_offsets(kafka, tuple(names))


def read_range(
    kafka: KafkaSettings,
    starts: Mapping[tuple[str, int], int],
    ends: Mapping[tuple[str, int], int],
    *,
    decode: bool = True,
    timeout_s: float = READ_TIMEOUT_S,
) -> tuple[list[Event], Counter[str]]:
    """Committed messages of ``[starts, ends)`` per partition: decoded events and counts."""
    codec = make_codec(kafka) if decode else None
    pending = {tp: end for tp, end in ends.items() if end > starts.get(tp, 0)}
    events: list[Event] = []
    counts: Counter[str] = Counter()
    if not pending:
        return events, counts
    consumer = _consumer(kafka)
    deadline = time.monotonic() + timeout_s
    try:
        consumer.assign([TopicPartition(t, p, starts.get((t, p), 0)) for t, p in pending])
        while pending and time.monotonic() < deadline:
            for msg in next_batch(consumer, 2000, 0.5):
                key = (str(msg.topic()), int(msg.partition() or 0))
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        pending.pop(key, None)
                    continue
                offset = int(msg.offset() or 0)
                if key not in pending or offset >= pending[key]:
                    pending.pop(key, None)
                    continue
                if offset + 1 >= pending[key]:
                    pending.pop(key, None)
                counts[key[0]] += 1
                if codec is not None:
                    with contextlib.suppress(PoisonInput):
                        events.append(codec.decode(msg.value(), msg.topic()))
    finally:
        consumer.close()
    if pending:
        log(f"reading topics timed out with {len(pending)} partition(s) unfinished")
    return events, counts


def run_costs(
    kafka: KafkaSettings, starts: Offsets, ends: Offsets
) -> tuple[dict[str, float], dict[str, float]]:
    """Per run id: the sum of tool durations and of agent-step durations (ms)."""
    events, _ = read_range(kafka, starts, ends)
    tools: dict[str, float] = {}
    steps: dict[str, float] = {}
    for e in events:
        if isinstance(e, ToolInvoked):
            tools[e.run_id] = tools.get(e.run_id, 0.0) + e.tool_invocation.duration_ms
        elif isinstance(e, AgentStep):
            steps[e.run_id] = steps.get(e.run_id, 0.0) + e.duration_ms
    return tools, steps
