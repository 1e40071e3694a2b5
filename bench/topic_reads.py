"""Reading a window of the event topics back, for the benchmark's accounting."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from bench.report import log
from projections.rebuild import end_offsets
from tracebound import kafka as edge
from tracebound.codec import make_codec
from tracebound.errors import TransientError
from tracebound.events import AgentStep, Event, ToolInvoked
from tracebound.settings import KafkaSettings

READ_TIMEOUT_S = 120.0
Offsets = edge.Offsets


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
    events: list[Event] = []
    counts: Counter[str] = Counter()
    consumer = edge.consumer(kafka, "bench", config=edge.READ_TO_END)
    try:
        for messages in edge.read_range(consumer, starts, ends, timeout_s=timeout_s):
            counts.update(str(m.topic()) for m in messages)
            if codec is not None:
                events += edge.decoded(codec, messages)
    except TransientError as exc:
        log(f"reading topics stopped early: {exc}")
    finally:
        consumer.close()
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
