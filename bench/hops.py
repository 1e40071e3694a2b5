"""Where an open-loop request's time goes, hop by hop along the pipeline.

A watcher reads every stage topic ``read_committed`` from its end while the
open loop runs, and notes per run and topic when the first message became
visible. With the message's Kafka timestamp (``CreateTime``: the producer's
``produce()``, which a role calls when its transaction commits) and the event's
``occurred_at`` (the role's handler made it), each role's share splits into:

- ``read``: the input visible → the role's handler made its output (fetch, the
  poll, the rest of the batch, decoding, the handler);
- ``hold``: output made → produced (the open transaction waiting to commit);
- ``commit``: produced → visible downstream (flush, the transaction's requests,
  the commit markers).

``send`` is the request's scheduled send time → produced, ``answer`` the
answer visible → the bench's answer reader received it. The watcher is a
reader like the roles (same client defaults, a short fetch wait so its own
lateness stays small); it keeps the raw values and decodes them after the run.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from bench.report import percentile
from tracebound import kafka as edge
from tracebound import topics
from tracebound.codec import Codec
from tracebound.errors import PoisonInput
from tracebound.settings import KafkaSettings

# The path of a request: each role reads the topic before it and writes the next.
PATH: tuple[tuple[str, str], ...] = (
    ("request", topics.REQUESTS),
    ("planner", topics.PLANS),
    ("executor", topics.EVIDENCE),
    ("gatekeeper", topics.GATEKEEPER_RESULTS),
    ("verifier", topics.VERDICTS),
    ("composer", topics.ANSWERS),
)
WATCH_FETCH_WAIT_MS = "5"
MadeAt = Callable[[str, bytes], "float | None"]


@dataclass(frozen=True, slots=True)
class Seen:
    """One run's first message on one topic: produced (ms), visible (s), raw value."""

    created_ms: int
    visible_s: float
    value: bytes


class HopWatcher:
    """Notes when each run's messages become visible on the stage topics."""

    def __init__(self, kafka: KafkaSettings) -> None:
        self._consumer = edge.consumer(
            kafka, "bench-hops", config={"fetch.wait.max.ms": WATCH_FETCH_WAIT_MS}
        )
        edge.assign_whole(self._consumer, [t for _, t in PATH], from_end=True)
        self.seen: dict[tuple[str, str], Seen] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="bench-hops", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.is_set():
            for message in edge.next_batch(self._consumer, 500, 0.2):
                now = time.time()
                key, value = message.key(), message.value()
                if message.error() is not None or key is None or value is None:
                    continue
                where = (str(message.topic()), key.decode())
                if where not in self.seen:
                    self.seen[where] = Seen(message.timestamp()[1], now, value)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._consumer.close()


def occurred_at(codec: Codec) -> MadeAt:
    """When a stage event was made (its ``occurred_at``, s); None for an undecodable one."""

    def made_at(topic: str, value: bytes) -> float | None:
        try:
            return codec.decode(value, topic).occurred_at.timestamp()
        except PoisonInput:
            return None

    return made_at


def hop_times(
    made_at: MadeAt,
    seen: Mapping[tuple[str, str], Seen],
    sent: Mapping[str, float],
    received: Mapping[str, float],
) -> dict[str, dict[str, float]]:
    """Per run seen along the whole path, each hop's duration (ms) in path order."""
    runs: dict[str, dict[str, float]] = {}
    for run, sent_s in sent.items():
        steps = [s for _, topic in PATH if (s := seen.get((topic, run))) is not None]
        if run not in received or len(steps) < len(PATH):
            continue
        request = steps[0]
        hops = {
            "send": request.created_ms / 1000 - sent_s,
            "request visible": request.visible_s - request.created_ms / 1000,
        }
        before = request.visible_s
        for (role, topic), step in zip(PATH[1:], steps[1:], strict=True):
            made = made_at(topic, step.value)
            if made is None:
                break
            hops[f"{role} read"] = made - before
            hops[f"{role} hold"] = step.created_ms / 1000 - made
            hops[f"{role} commit"] = step.visible_s - step.created_ms / 1000
            before = step.visible_s
        else:
            hops["answer read"] = received[run] - before
            runs[run] = {name: seconds * 1000 for name, seconds in hops.items()}
    return runs


def summary(runs: Mapping[str, Mapping[str, float]]) -> dict[str, dict[str, float]]:
    """p50 and p99 (ms) of each hop, in path order."""
    names = next(iter(runs.values()), {}).keys()
    return {
        name: {
            "p50": round(percentile([r[name] for r in runs.values()], 50), 1),
            "p99": round(percentile([r[name] for r in runs.values()], 99), 1),
        }
        for name in names
    }


def slowest(runs: Mapping[str, Mapping[str, float]], share: float = 0.01) -> dict[str, float]:
    """The mean of each hop (ms) over the slowest ``share`` of the runs end to end: where
    the tail's time goes (a tail made by one hop stalling shows as that hop)."""
    totals = sorted(runs.values(), key=lambda hops: sum(hops.values()), reverse=True)
    tail = totals[: max(1, round(len(totals) * share))] if totals else []
    names = tail[0].keys() if tail else ()
    return {name: round(sum(h[name] for h in tail) / len(tail), 1) for name in names}


def lines(runs: Mapping[str, Mapping[str, float]]) -> tuple[str, str]:
    """``open loop hops (p50/p99 ms): send 1/3, …`` and the slowest 1 %'s mean hops."""
    stats = summary(runs)
    every = ", ".join(f"{name} {s['p50']:.0f}/{s['p99']:.0f}" for name, s in stats.items())
    tail = ", ".join(f"{name} {ms:.0f}" for name, ms in slowest(runs).items())
    return (
        f"open loop hops (p50/p99 ms, {len(runs)} runs): {every}",
        f"open loop hops of the slowest 1% (mean ms): {tail}",
    )
