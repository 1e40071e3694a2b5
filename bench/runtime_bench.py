"""What the exactly-once runtime costs against a plain consume→produce loop.

Both loops read the same fresh input topic (real encoded ``DiagnosisRequested``
events, keyed by run id) in the same process, one after the other, each into a
fresh output topic of its own:

- tracebound: a :class:`~tracebound.runtime.ServiceLoop` with a trivial handler
  (the input event re-issued with a new event id): Avro decode, handler, Avro
  encode, one Kafka transaction per batch with its input offsets;
- plain: a confluent-kafka consumer and producer, bytes in and the same bytes out,
  offsets committed asynchronously, no transactions and no Avro.

Throughput is the count over the time from the first message handled to the last
batch committed (tracebound) or flushed (plain), so group join and start-up are
left out of both. The ratio is tracebound / plain.
"""

from __future__ import annotations

import cProfile
import math
import threading
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient

from bench.pipeline_bench import QUESTIONS
from bench.report import dump_profiles, log
from tracebound import kafka as edge
from tracebound.client import new_request
from tracebound.codec import make_codec
from tracebound.events import DiagnosisRequested, Event
from tracebound.events.base import new_event_id
from tracebound.runtime import ServiceLoop, ServiceSpec
from tracebound.settings import KafkaSettings, RuntimeSettings, StackSettings
from tracebound.stack.topics import ensure_topics, quiet_admin_config

LOOP_TIMEOUT_S = 180.0


def encoded_requests(kafka: KafkaSettings, count: int) -> list[tuple[bytes, bytes]]:
    """(key, value) pairs of ``count`` real encoded requests of the bench's mix."""
    codec = make_codec(kafka)
    pairs = []
    for i in range(count):
        query, language = QUESTIONS[i % len(QUESTIONS)]
        event = new_request(query, language=language, requested_by="bench")
        pairs.append((event.run_id.encode(), codec.encode(event)))
    return pairs


def _fill(kafka: KafkaSettings, topic: str, pairs: Sequence[tuple[bytes, bytes]]) -> None:
    producer = edge.producer(kafka, "bench", config={"linger.ms": "20"})
    for key, value in pairs:
        while True:
            try:
                producer.produce(topic, key=key, value=value)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    if producer.flush(60):
        raise RuntimeError(f"could not fill {topic}")


def _delete_topics(kafka: KafkaSettings, names: Sequence[str]) -> None:
    bootstrap = kafka.client_config()["bootstrap.servers"]
    admin = AdminClient(quiet_admin_config(bootstrap, kafka.client_config()))
    for future in admin.delete_topics(list(names), request_timeout=15).values():
        try:
            future.result()
        except Exception as exc:  # clean-up only: report and go on
            log(f"could not delete a bench topic: {exc}")


def tracebound_loop(
    kafka: KafkaSettings,
    *,
    in_topic: str,
    out_topic: str,
    dead_letters: str,
    count: int,
    profile_to: Path | None = None,
) -> dict[str, Any]:
    """One ServiceLoop with a trivial handler over ``count`` inputs; messages per second."""
    state: dict[str, float] = {"handled": 0, "first": math.nan, "last": math.nan}
    done = threading.Event()

    def handle(event: Event) -> Sequence[Event]:
        if state["handled"] == 0:
            state["first"] = time.perf_counter()
        state["handled"] += 1
        return [
            event.model_copy(update={"event_id": new_event_id(), "causation_id": event.event_id})
        ]

    def committed() -> None:
        if state["handled"] >= count and not done.is_set():
            state["last"] = time.perf_counter()
            done.set()

    spec = ServiceSpec(
        name=f"bench-runtime-{uuid.uuid4().hex[:8]}",
        input_topics=(in_topic,),
        handler=handle,
        accepts=(DiagnosisRequested,),
        route=lambda _event: out_topic,
        dead_letter_topic=dead_letters,
        on_commit=committed,
    )
    loop = ServiceLoop(spec, kafka=kafka, runtime=RuntimeSettings.for_service("bench_runtime"))
    profiler = cProfile.Profile() if profile_to is not None else None

    def run() -> None:
        if profiler is not None:
            profiler.enable()
        try:
            loop.run()
        finally:
            if profiler is not None:
                profiler.disable()

    thread = threading.Thread(target=run, name="bench-service-loop", daemon=True)
    thread.start()
    finished = done.wait(LOOP_TIMEOUT_S)
    loop.stop()
    thread.join(60)
    if not finished:
        raise RuntimeError(f"tracebound loop handled {state['handled']:.0f}/{count} in time")
    seconds = state["last"] - state["first"]
    result: dict[str, Any] = {
        "messages": count,
        "seconds": round(seconds, 3),
        "messages_per_second": round(count / seconds, 1),
    }
    if profiler is not None and profile_to is not None:
        result["profile"] = dump_profiles([profiler], profile_to)
    return result


def plain_loop(kafka: KafkaSettings, in_topic: str, out_topic: str, count: int) -> dict[str, Any]:
    """Bytes in, the same bytes out, offsets committed asynchronously; messages per second."""
    # The loop's own consumer settings, but plain: no transactions, offsets stored as read.
    consumer = edge.consumer(
        kafka,
        "bench-plain",
        group=f"bench-plain-{uuid.uuid4().hex[:8]}",
        config={"isolation.level": "read_uncommitted", "enable.auto.offset.store": "true"},
    )
    plain = {"enable.idempotence": "false", "linger.ms": "5", "compression.type": "lz4"}
    producer = edge.producer(kafka, "bench-plain", config=plain)
    consumer.subscribe([in_topic])
    handled = 0
    first = math.nan
    deadline = time.monotonic() + LOOP_TIMEOUT_S
    try:
        while handled < count and time.monotonic() < deadline:
            batch = [m for m in consumer.consume(500, 0.1) if m.error() is None]
            if not batch:
                continue
            if handled == 0:
                first = time.perf_counter()
            for m in batch:
                while True:
                    try:
                        producer.produce(out_topic, key=m.key(), value=m.value())
                        break
                    except BufferError:
                        producer.poll(0.05)
                producer.poll(0)
            consumer.commit(asynchronous=True)
            handled += len(batch)
        if producer.flush(60):
            raise RuntimeError("plain loop: producer did not flush")
        last = time.perf_counter()
    finally:
        consumer.close()
    if handled < count:
        raise RuntimeError(f"plain loop handled {handled}/{count} in time")
    seconds = last - first
    return {
        "messages": count,
        "seconds": round(seconds, 3),
        "messages_per_second": round(count / seconds, 1),
    }


def run(
    kafka: KafkaSettings,
    count: int = 20_000,
    order: int = 0,
    profile_to: Path | None = None,
) -> dict[str, Any]:
    """Both loops over one fresh input topic; ``order`` alternates which one goes first."""
    tag = uuid.uuid4().hex[:8]
    names = [f"bench.runtime.{tag}.{suffix}" for suffix in ("in", "out-tb", "out-plain", "dlq")]
    in_topic, out_tb, out_plain, dlq = names
    ensure_topics(kafka, {n: {} for n in names}, StackSettings().partitions)
    try:
        pairs = encoded_requests(kafka, count)
        _fill(kafka, in_topic, pairs)
        sizes = [len(v) for _, v in pairs]
        measure = {
            "tracebound": lambda: tracebound_loop(
                kafka,
                in_topic=in_topic,
                out_topic=out_tb,
                dead_letters=dlq,
                count=count,
                profile_to=profile_to,
            ),
            "plain": lambda: plain_loop(kafka, in_topic, out_plain, count),
        }
        first = ("tracebound", "plain") if order % 2 == 0 else ("plain", "tracebound")
        done = {name: measure[name]() for name in first}
        tb, plain = done["tracebound"], done["plain"]
    finally:
        _delete_topics(kafka, names)
    ratio = tb["messages_per_second"] / plain["messages_per_second"]
    log(
        f"runtime: tracebound {tb['messages_per_second']:.0f} msg/s,"
        f" plain {plain['messages_per_second']:.0f} msg/s, ratio {ratio:.3f}"
    )
    return {
        "ratio": round(ratio, 4),
        "tracebound": tb,
        "plain": plain,
        "message_bytes_mean": round(sum(sizes) / len(sizes), 1),
    }
