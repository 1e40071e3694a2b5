"""The composer's restore of its once-per-run memory over a long answers history.

A private topic (the answers topic's partition count) gets ``runs`` answers
stamped two windows ago — one small encoded answer under a distinct key each,
written as fast as the producer goes — and ``recent`` distinct answers inside
the window. Then :class:`~services.composer.answered.AnsweredRuns` restores:
first as a new replica does (everything inside the window), then again as a
running replica does after a rebalance (only what was committed since). With
``--full-read`` the topic is also read from offset 0, as the composer used to on
every rebalance. The topic is deleted at the end.

``python -m bench.answered_bench --runs 1000000`` (or ``tracebound bench --only restore``).
"""

from __future__ import annotations

import argparse
import os
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from bench.report import Figure, log
from services.composer.answered import AnsweredRuns
from tests.support.samples import sample
from tracebound import kafka as edge
from tracebound import topics
from tracebound.codec import Codec, make_codec
from tracebound.events import Answer
from tracebound.settings import KafkaSettings, StackSettings
from tracebound.stack.topics import ensure_topics, quiet_admin_config, stack_kafka_settings

WINDOW_S = 86_400.0
TARGET_S = 5.0


def _write(kafka: KafkaSettings, codec: Codec, topic: str, runs: int, recent: int) -> float:
    """Old answers under distinct keys, then recent distinct ones; seconds spent."""
    started = time.perf_counter()
    producer = Producer(
        {
            **kafka.client_config(),
            "linger.ms": "50",
            "batch.size": "1000000",
            "compression.type": "lz4",
            "queue.buffering.max.messages": "500000",
        }
    )
    old = datetime.now(UTC) - timedelta(seconds=2 * WINDOW_S)
    answer = sample(Answer)
    value = codec.encode(answer.model_copy(update={"occurred_at": old}), topic)
    old_ms = int(old.timestamp() * 1000)
    for n in range(runs):
        _produce(producer, topic, f"old-{n}".encode(), value, old_ms)
        if n % 200_000 == 0 and n:
            log(f"restore: {n:,} old answers written")
    for n in range(recent):
        fresh = answer.model_copy(
            update={
                "run_id": f"recent-{n}-{uuid.uuid4().hex[:6]}",
                "occurred_at": datetime.now(UTC),
            }
        )
        _produce(producer, topic, fresh.run_id.encode(), codec.encode(fresh, topic), None)
    producer.flush(120)
    return time.perf_counter() - started


def _produce(producer: Any, topic: str, key: bytes, value: bytes, at_ms: int | None) -> None:
    while True:
        try:
            if at_ms is None:
                producer.produce(topic, value=value, key=key)
            else:
                producer.produce(topic, value=value, key=key, timestamp=at_ms)
            return
        except BufferError:
            producer.poll(0.05)


def _timed_restore(answered: AnsweredRuns) -> tuple[float, float, int]:
    """Wall and CPU seconds of one restore, and the records it read."""
    started, cpu, read = time.perf_counter(), time.process_time(), answered.messages_read
    answered.restore()
    return (
        time.perf_counter() - started,
        time.process_time() - cpu,
        answered.messages_read - read,
    )


def _full_read_s(kafka: KafkaSettings, codec: Codec, topic: str) -> float:
    """Reading and decoding the whole topic from offset 0 (the former restore)."""
    started = time.perf_counter()
    consumer = edge.consumer(kafka, "bench-full-read", config=edge.READ_TO_END)
    try:
        ends = edge.end_offsets(consumer, [topic])
        for messages in edge.read_range(consumer, {}, ends, timeout_s=600):
            sum(1 for _ in edge.decoded(codec, messages))
    finally:
        consumer.close()
    return time.perf_counter() - started


def run(kafka: KafkaSettings, runs: int, recent: int, *, full_read: bool = False) -> dict[str, Any]:
    codec = make_codec(kafka)
    admin = AdminClient(quiet_admin_config(kafka.bootstrap_servers, kafka.client_config()))
    counts = edge.partition_counts(admin, [topics.ANSWERS], 10.0)
    partitions = counts.get(topics.ANSWERS, 3)
    topic = f"bench.answers.{uuid.uuid4().hex[:8]}"
    ensure_topics(kafka, {topic: {}}, partitions)
    try:
        log(f"restore: writing {runs:,} old and {recent:,} recent answers to {topic}")
        written_s = _write(kafka, codec, topic, runs, recent)
        answered = AnsweredRuns(kafka, codec, WINDOW_S, topic=topic)
        first, first_cpu, first_read = _timed_restore(answered)
        remembered = len(answered)
        again, again_cpu, again_read = _timed_restore(answered)
        result: dict[str, Any] = {
            "old_answers": runs,
            "recent_answers": recent,
            "partitions": partitions,
            "write_seconds": round(written_s, 2),
            "first_restore_seconds": round(first, 3),
            "first_restore_cpu_seconds": round(first_cpu, 3),
            "first_restore_records_read": first_read,
            "rebalance_restore_seconds": round(again, 3),
            "rebalance_restore_cpu_seconds": round(again_cpu, 3),
            "rebalance_restore_records_read": again_read,
            "remembered": remembered,
            "load_average": os.getloadavg()[0],
        }
        if full_read:
            result["full_read_seconds"] = round(_full_read_s(kafka, codec, topic), 2)
        return result
    finally:
        for future in admin.delete_topics([topic], request_timeout=30).values():
            future.result()


def figure(result: dict[str, Any]) -> Figure:
    first, again = result["first_restore_seconds"], result["rebalance_restore_seconds"]
    return Figure(
        "composer restore",
        f"{first:.2f} s for a new replica, {again:.3f} s after a rebalance"
        f" ({result['old_answers']:,} answers older than the window,"
        f" {result['recent_answers']:,} inside; {result['first_restore_records_read']:,}"
        f" records read, {result['first_restore_cpu_seconds']:.2f} s CPU)",
        f"< {TARGET_S:.0f} s",
        max(first, again) < TARGET_S,
        "one run",
    )


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.answered_bench", description=__doc__)
    parser.add_argument("--runs", type=int, default=1_000_000, help="answers older than the window")
    parser.add_argument("--recent", type=int, default=10_000, help="answers inside the window")
    parser.add_argument("--full-read", action="store_true", help="also read from offset 0")
    args = parser.parse_args()
    result = run(
        stack_kafka_settings(StackSettings()), args.runs, args.recent, full_read=args.full_read
    )
    print(figure(result).line(24))
    print(result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
