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

import contextlib
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, TopicPartition

from bench.report import log, percentile
from tracebound import topics
from tracebound.client import AnswerReader, new_request, publish
from tracebound.codec import Codec, make_codec
from tracebound.errors import PoisonInput
from tracebound.events import AgentStep, DiagnosisRequested, Event, ToolInvoked
from tracebound.publisher import KafkaPublisher
from tracebound.settings import KafkaSettings, StackSettings
from tracebound.stack.services import service_states, start_services, stop_services

ROLES = ("planner", "executor", "gatekeeper", "verifier", "composer")
# The request mix: alerts and logs, both languages, narrow and broad questions.
QUESTIONS: tuple[tuple[str, str], ...] = (
    ("payment-service 当前是否有 HighCPUUsage 告警？", "zh"),
    ("inventory-service 是否有 HikariCP 连接池耗尽日志？", "zh"),
    ("Are there HikariCP pool exhaustion logs for inventory-service?", "en"),
    ("Why is order-service using so much memory? Please analyse it.", "en"),
    ("user-service 是否有 SlowResponse 告警？", "zh"),
)
READ_TIMEOUT_S = 120.0

Offsets = dict[tuple[str, int], int]


# -- reading topics -------------------------------------------------------------------


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
    consumer = _consumer(kafka)
    try:
        meta = consumer.list_topics(timeout=10)
        ends: Offsets = {}
        for topic in names:
            if topic not in meta.topics:
                continue
            for p in sorted(meta.topics[topic].partitions):
                _, high = consumer.get_watermark_offsets(
                    TopicPartition(topic, p), timeout=10, cached=False
                )
                ends[(topic, p)] = high
        return ends
    finally:
        consumer.close()


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
            for msg in consumer.consume(2000, 0.5):
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


# -- the role processes ---------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of ``pid`` so far (NaN when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8").rpartition(")")[2].split()
    except OSError:
        return math.nan
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def rss_mb(pid: int) -> float:
    """Resident set size of ``pid`` in MB (VmRSS), NaN when unreadable."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text(encoding="utf-8").splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return math.nan


class Roles:
    """The five roles as detached processes with a private state folder (pid files, logs)."""

    def __init__(self, stack_env: Mapping[str, str]) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="tracebound-bench-roles-"))
        self.settings = StackSettings(state_dir=self.folder)
        self.env = dict(stack_env)
        for role in ROLES:
            self.env[f"TRACEBOUND_{role.upper()}_MODE"] = "rules"

    def start(self) -> None:
        for note in start_services(self.settings, self.env, ROLES):
            log(note)

    def pids(self) -> dict[str, int]:
        return {
            s.name: s.pid
            for s in service_states(self.settings, None)
            if s.name in ROLES and s.pid is not None
        }

    def stop(self, keep_logs: bool = False) -> None:
        for note in stop_services(self.settings, ROLES):
            log(note)
        if keep_logs:
            log(f"role logs kept in {self.folder / 'services'}")
        else:
            shutil.rmtree(self.folder, ignore_errors=True)


@contextlib.contextmanager
def running_roles(stack_env: Mapping[str, str]) -> Iterator[Roles]:
    roles = Roles(stack_env)
    roles.start()
    failed = False
    try:
        yield roles
    except BaseException:
        failed = True
        raise
    finally:
        roles.stop(keep_logs=failed)


# -- profiling --------------------------------------------------------------------------


def py_spy() -> str | None:
    local = Path(sys.executable).parent / "py-spy"
    return str(local) if local.exists() else shutil.which("py-spy")


@dataclass
class Sampler:
    """``py-spy record`` attached to each role process, stopped with SIGINT."""

    out_dir: Path
    procs: dict[str, tuple[subprocess.Popen[bytes], Path]] = field(default_factory=dict)

    def start(self, pids: Mapping[str, int]) -> None:
        exe = py_spy()
        if exe is None:
            log("py-spy not found (pip install py-spy into the venv); no profile")
            return
        self.out_dir.mkdir(parents=True, exist_ok=True)
        for role, pid in pids.items():
            out = self.out_dir / f"{role}.collapsed.txt"
            argv = [exe, "record", "--pid", str(pid), "--rate", "100", "--nonblocking"]
            argv += ["--format", "raw", "--duration", "900", "-o", str(out)]
            proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.procs[role] = (proc, out)

    def stop(self) -> dict[str, dict[str, Any]]:
        for proc, _ in self.procs.values():
            proc.send_signal(signal.SIGINT)
        summaries: dict[str, dict[str, Any]] = {}
        for role, (proc, out) in self.procs.items():
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
            if out.exists():
                summaries[role] = summarise_collapsed(out)
                summaries[role]["file"] = str(out)
        return summaries


def _frame_name(frame: str) -> str:
    """``func (path/to/file.py:123)`` → ``path/to/file.py:func`` relative to known roots."""
    func, _, where = frame.partition(" (")
    path = where.rstrip(")").rsplit(":", 1)[0]
    for marker in ("site-packages/", "/work/main/", "lib/python3"):
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    return f"{path}:{func}"


def summarise_collapsed(path: Path, top: int = 15) -> dict[str, Any]:
    """Self and inclusive sample shares per function of a py-spy ``raw`` profile."""
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [_frame_name(f) for f in stack.split(";") if f]
        if not frames:
            continue
        total += count
        own[frames[-1]] += count
        for name in set(frames):
            inclusive[name] += count

    def share(counter: Counter[str]) -> list[tuple[str, float]]:
        return (
            [(k, round(100 * v / total, 1)) for k, v in counter.most_common(top)] if total else []
        )

    return {"samples": total, "self_pct": share(own), "inclusive_pct": share(inclusive)}


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
) -> dict[str, Any]:
    """``count`` requests at once; throughput and latency of the saturated pipeline."""
    reader = AnswerReader(kafka)
    starts = watermarks(kafka, (topics.TOOL_INVOCATIONS, topics.AGENT_STEPS))
    cpu_before = {role: cpu_seconds(pid) for role, pid in pids.items()}
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
    cpu = {role: cpu_seconds(pid) - cpu_before[role] for role, pid in pids.items()}
    seconds = finished - started
    result = _summarise(kafka, sent, received, starts)
    result.update(
        {
            "seconds": round(seconds, 3),
            "publish_seconds": round(published - started, 3),
            "requests_per_second": round(len(received) / seconds, 1) if seconds > 0 else 0.0,
            "cpu_ms_per_request": {
                role: round(1000 * c / max(len(received), 1), 2) for role, c in cpu.items()
            },
            "profile": profile,
        }
    )
    return result


def open_loop(
    kafka: KafkaSettings, codec: Codec, rate: float, seconds: float, tick_s: float = 0.1
) -> dict[str, Any]:
    """Requests on a fixed schedule; latency from each request's scheduled send time."""
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
    publisher = KafkaPublisher(kafka, codec)  # long-lived, as a real load source would be
    wall0, mono0 = time.time(), time.monotonic()
    done = 0
    late_ms: list[float] = []
    try:
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
            time.sleep(max(0.0, tick_s - (time.monotonic() - mono0) % tick_s))
        send_seconds = time.monotonic() - mono0
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with lock:
                if len(received) >= done:
                    break
            time.sleep(0.2)
    finally:
        publisher.close()
        stop.set()
        thread.join(5)
        reader.close()
    with lock:
        answered = dict(received)
    result = _summarise(kafka, sent, answered, starts)
    result.update(
        {
            "offered_rate": rate,
            "achieved_send_rate": round(done / send_seconds, 1) if send_seconds > 0 else 0.0,
            "send_seconds": round(send_seconds, 2),
            "publish_lag_ms_p99": round(percentile(late_ms, 99), 1),
        }
    )
    return result


def roles_rss(pids: Mapping[str, int]) -> dict[str, float]:
    return {role: round(rss_mb(pid), 1) for role, pid in pids.items()}
