"""The whole pipeline on the local stack: five role processes in rules mode.

Two runs over the same processes:

- a *burst* (closed system): ``N`` requests published at once, read back as answers;
  throughput is ``N`` over the time from the first publish to the last answer, and
  the latencies are those of a saturated pipeline (mostly queueing);
- an *open-loop* run: requests published on a fixed schedule (``rate`` per second
  for ``seconds``), whatever the answers do; latency is measured from each
  request's scheduled send time, so a slow pipeline cannot hide its queueing by
  slowing the sender down.

End-to-end latency is *answer received by the reader − request ``requested_at``*
(the same host's wall clock; ``requested_at`` is set when the request is created,
right before it is published). The in-pipeline latency *Answer.occurred_at −
requested_at* is reported too. Overhead per request subtracts the run's tool time
(``ToolInvoked.tool_invocation.duration_ms``, read from ``tracebound.tool-invocations``)
and agent-step time (``AgentStep.duration_ms``) from the end-to-end latency.

With ``profile`` set, every role process is sampled by ``py-spy`` during the burst
and the collapsed stacks are summarised (self and inclusive time per function).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench import hops
from bench.processes import CpuMeter, Sampler, stage_seconds
from bench.report import log, percentile
from bench.topic_reads import READ_TIMEOUT_S, Offsets, run_costs, watermarks
from tracebound import topics
from tracebound.client import AnswerReader, new_request, publish
from tracebound.codec import Codec
from tracebound.collector import tuned_collector
from tracebound.events import DiagnosisRequested
from tracebound.publisher import KafkaPublisher
from tracebound.settings import KafkaSettings

# The request mix: alerts and logs, both languages, narrow and broad questions.
QUESTIONS: tuple[tuple[str, str], ...] = (
    ("payment-service 当前是否有 HighCPUUsage 告警？", "zh"),
    ("inventory-service 是否有 HikariCP 连接池耗尽日志？", "zh"),
    ("Are there HikariCP pool exhaustion logs for inventory-service?", "en"),
    ("Why is order-service using so much memory? Please analyse it.", "en"),
    ("user-service 是否有 SlowResponse 告警？", "zh"),
)


# -- the runs ---------------------------------------------------------------------------


def _requests(count: int, offset: int = 0) -> list[DiagnosisRequested]:
    out = []
    for i in range(count):
        query, language = QUESTIONS[(offset + i) % len(QUESTIONS)]
        out.append(new_request(query, language=language, requested_by="bench"))
    return out


def warm_up(kafka: KafkaSettings, codec: Codec, timeout_s: float = 180.0) -> float:
    """One request of each kind through the pipeline: every role joined and warm."""
    reader = AnswerReader(kafka)
    started = time.monotonic()
    try:
        asked = _requests(len(QUESTIONS))
        publish(kafka, list(asked), codec)
        got = reader.wait_for({e.run_id for e in asked}, timeout_s)
    finally:
        reader.close()
    if len(got) != len(asked):
        raise RuntimeError(f"warm-up: {len(got)}/{len(asked)} answers within {timeout_s:.0f}s")
    return time.monotonic() - started


def _latency_stats(values: Sequence[float]) -> dict[str, float]:
    return {
        "p50": round(percentile(values, 50), 1),
        "p95": round(percentile(values, 95), 1),
        "p99": round(percentile(values, 99), 1),
        "max": round(max(values), 1) if values else math.nan,
    }


def _summarise(
    kafka: KafkaSettings,
    sent: Mapping[str, float],
    received: Mapping[str, tuple[float, float]],
    starts: Offsets,
) -> dict[str, Any]:
    """Latency, in-pipeline latency and overhead (ms) of the answered runs."""
    ends = watermarks(kafka, (topics.TOOL_INVOCATIONS, topics.AGENT_STEPS))
    tools, steps = run_costs(kafka, starts, ends)
    e2e = [(received[r][0] - sent[r]) * 1000 for r in received]
    inside = [received[r][1] for r in received]
    tool_ms = [tools.get(r, 0.0) for r in received]
    step_ms = [steps.get(r, 0.0) for r in received]
    overhead = [
        (received[r][0] - sent[r]) * 1000 - tools.get(r, 0.0) - steps.get(r, 0.0) for r in received
    ]
    return {
        "answered": len(received),
        "asked": len(sent),
        "latency_ms": _latency_stats(e2e),
        "in_pipeline_latency_ms": _latency_stats(inside),
        "tool_ms_per_request": {"mean": round(sum(tool_ms) / max(len(tool_ms), 1), 2)},
        "agent_step_ms_per_request": {"mean": round(sum(step_ms) / max(len(step_ms), 1), 2)},
        "overhead_ms": {
            **_latency_stats(overhead),
            "mean": round(sum(overhead) / len(overhead), 1) if overhead else math.nan,
        },
    }


def burst(
    kafka: KafkaSettings,
    codec: Codec,
    count: int,
    pids: Mapping[str, int],
    profile_dir: Path | None = None,
    *,
    metrics_ports: Mapping[str, int] | None = None,
    processes: Mapping[str, Sequence[int]] | None = None,
) -> dict[str, Any]:
    """``count`` requests at once; throughput and latency of the saturated pipeline.

    With ``metrics_ports``, each role's time per stage (codec, handler, Kafka,
    PostgreSQL) is read from its ``/metrics`` before and after. ``processes`` (the roles
    and the rest of the stack, by name: the broker, PostgreSQL, the projections…) are
    reported as CPU per request; without it, the roles of ``pids``.
    """
    reader = AnswerReader(kafka)
    starts = watermarks(kafka, (topics.TOOL_INVOCATIONS, topics.AGENT_STEPS))
    ports = metrics_ports or {}
    stages_before = {role: stage_seconds(port) for role, port in ports.items()}
    meter = CpuMeter(processes or {role: [pid] for role, pid in pids.items()})
    sampler = Sampler(profile_dir) if profile_dir is not None else None
    if sampler is not None:
        sampler.start(pids)
    asked = _requests(count)
    sent = {e.run_id: e.request.requested_at.timestamp() for e in asked}
    received: dict[str, tuple[float, float]] = {}
    timeout_s = max(READ_TIMEOUT_S, count / 5)
    started = time.time()
    try:
        publish(kafka, list(asked), codec)
        published = time.time()
        log(f"burst: {count} requests published in {published - started:.2f}s")
        for answer in reader.answers(timeout_s):
            if answer.run_id in sent and answer.run_id not in received:
                inside = (answer.occurred_at.timestamp() - sent[answer.run_id]) * 1000
                received[answer.run_id] = (time.time(), inside)
                if len(received) % 500 == 0:
                    log(f"burst: {len(received)}/{count} answers")
                if len(received) == count:
                    break
    finally:
        reader.close()
        profile = sampler.stop() if sampler is not None else {}
    finished = max((t for t, _ in received.values()), default=time.time())
    cpu = meter.spent()
    per_request = 1000 / max(len(received), 1)
    stages = {
        role: {
            stage: round((seconds - stages_before[role].get(stage, 0.0)) * per_request, 3)
            for stage, seconds in stage_seconds(port).items()
        }
        for role, port in ports.items()
    }
    seconds = finished - started
    result = _summarise(kafka, sent, received, starts)
    result.update(
        {
            "seconds": round(seconds, 3),
            "publish_seconds": round(published - started, 3),
            "requests_per_second": round(len(received) / seconds, 1) if seconds > 0 else 0.0,
            "cpu_ms_per_request": {role: round(cpu[role] * per_request, 2) for role in pids},
            "stack_cpu_ms_per_request": {
                name: round(spent * per_request, 2)
                for name, spent in cpu.items()
                if name not in pids
            },
            "stage_ms_per_request": stages,
            "profile": profile,
        }
    )
    return result


def open_loop(
    kafka: KafkaSettings,
    codec: Codec,
    rate: float,
    seconds: float,
    processes: Mapping[str, Sequence[int]] | None = None,
) -> dict[str, Any]:
    """Requests on a fixed schedule; latency from each request's scheduled send time.

    ``processes`` (the roles and the rest of the stack, by name) are reported as the
    cores each kept busy meanwhile.

    The sender sleeps until the next request is due and sends it then: a sender
    waking on a coarser tick would add up to a tick of its own lateness to every
    request's latency. Whatever it still sends late (a slow acknowledgement) counts.
    The bench process runs with the service loops' collector settings meanwhile: a
    full collection of what the earlier runs left on its heap would stop the sender
    and the readers at once, and count as the pipeline's latency.
    """
    meter = CpuMeter(processes or {})
    started = time.monotonic()
    with tuned_collector():
        result = _open_loop(kafka, codec, rate, seconds)
    elapsed = time.monotonic() - started
    result["cores"] = {name: round(spent / elapsed, 3) for name, spent in meter.spent().items()}
    return result


def _send_at_rate(
    publisher: KafkaPublisher,
    rate: float,
    total: int,
    seconds: float,
    *,
    lock: threading.Lock,
    sent: dict[str, float],
    requested: dict[str, float],
) -> tuple[int, float, list[float]]:
    """Publish ``total`` requests at ``rate`` a second, open loop: how many were sent, in
    how long, and how late each batch was (ms).

    Each request's scheduled send time goes into ``sent`` and its ``requested_at`` into
    ``requested``; sending stops 60 s after the ``seconds`` of the schedule.
    """
    wall0, mono0 = time.time(), time.monotonic()
    done = 0
    late_ms: list[float] = []
    while done < total and time.monotonic() - mono0 < seconds + 60:
        due = min(total, math.floor((time.monotonic() - mono0) * rate) + 1)
        if due > done:
            batch = _requests(due - done, done)
            with lock:
                for j, e in enumerate(batch, start=done):
                    sent[e.run_id] = wall0 + j / rate
                    requested[e.run_id] = e.request.requested_at.timestamp()
            publisher.publish(batch)
            late_ms.append((time.time() - (wall0 + (due - 1) / rate)) * 1000)
            done = due
        time.sleep(max(0.0, done / rate - (time.monotonic() - mono0)))
    return done, time.monotonic() - mono0, late_ms


def _await_answers(
    received: dict[str, tuple[float, float]], lock: threading.Lock, count: int, timeout_s: float
) -> None:
    """Wait until ``received`` holds ``count`` answers, or ``timeout_s`` has passed."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with lock:
            if len(received) >= count:
                return
        time.sleep(0.2)


def _open_loop(kafka: KafkaSettings, codec: Codec, rate: float, seconds: float) -> dict[str, Any]:
    total = max(1, int(rate * seconds))
    reader = AnswerReader(kafka)
    starts = watermarks(kafka, (topics.TOOL_INVOCATIONS, topics.AGENT_STEPS))
    received: dict[str, tuple[float, float]] = {}
    sent: dict[str, float] = {}
    requested: dict[str, float] = {}
    stop = threading.Event()
    lock = threading.Lock()

    def read() -> None:
        while not stop.is_set():
            for answer in reader.answers(1.0):
                now = time.time()
                with lock:
                    if answer.run_id in requested and answer.run_id not in received:
                        inside = (answer.occurred_at.timestamp() - requested[answer.run_id]) * 1000
                        received[answer.run_id] = (now, inside)

    thread = threading.Thread(target=read, name="bench-answers", daemon=True)
    thread.start()
    watcher = hops.HopWatcher(kafka)
    watcher.start()
    publisher = KafkaPublisher(kafka, codec)  # long-lived, as a real load source would be
    # A new producer's first send waits for its connection, metadata and producer id
    # (100-500 ms): paid by an uncounted request, not by the first ones of the schedule.
    publisher.publish(_requests(1))
    try:
        done, send_seconds, late_ms = _send_at_rate(
            publisher, rate, total, seconds, lock=lock, sent=sent, requested=requested
        )
        _await_answers(received, lock, done, timeout_s=60)
    finally:
        publisher.close()
        stop.set()
        thread.join(5)
        reader.close()
        watcher.stop()
    with lock:
        answered = dict(received)
    result = _summarise(kafka, sent, answered, starts)
    per_run = hops.hop_times(
        hops.occurred_at(codec), watcher.seen, sent, {r: t for r, (t, _) in answered.items()}
    )
    for line in hops.lines(per_run):
        log(line)
    result.update(
        {
            "offered_rate": rate,
            "achieved_send_rate": round(done / send_seconds, 1) if send_seconds > 0 else 0.0,
            "send_seconds": round(send_seconds, 2),
            "publish_lag_ms_p99": round(percentile(late_ms, 99), 1),
            "hops_ms": hops.summary(per_run),
            "slowest_hops_ms": hops.slowest(per_run),
        }
    )
    return result
