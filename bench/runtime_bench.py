"""What the exactly-once runtime costs against its real peers, measured in one run.

Every loop reads the same requests (real encoded ``DiagnosisRequested`` events,
keyed by run id) from a fresh input topic, each in a consumer group of its own,
into a fresh output topic of its own, one after the other in one run, all
exactly-once at the runtime's own commit policy
(:class:`~tracebound.runtime.commit_policy.CommitPolicy`):

- raw: confluent-kafka, bytes forwarded (:mod:`bench.eos_loops`);
- fastavro: the same, each value decoded and encoded with a pre-parsed schema;
- quix: Quix Streams' exactly-once JSON path, the same requests as JSON, at the
  same commit interval, in its own environment (:mod:`bench.quix_bench`);
- tracebound: a :class:`~tracebound.runtime.ServiceLoop` with a trivial handler
  (the input event returned as it is): Avro decode, model, handler, Avro encode.

Throughput is the count over the time from the first message handled to the
last transaction committed, so group join and start-up are left out. The
runtime's figure is given as a ratio to each of the others.
"""

from __future__ import annotations

import cProfile
import math
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient

from bench import eos_loops, quix_bench
from bench.pipeline_bench import QUESTIONS
from bench.report import dump_profiles, log
from tracebound import fastjson
from tracebound import kafka as edge
from tracebound.client import new_request
from tracebound.codec import make_codec
from tracebound.events import DiagnosisRequested, Event
from tracebound.runtime import ServiceLoop, ServiceSpec
from tracebound.settings import KafkaSettings, RuntimeSettings, StackSettings
from tracebound.stack.topics import ensure_topics, quiet_admin_config

LOOP_TIMEOUT_S = 180.0
LOOPS = ("tracebound", "raw", "fastavro", "quix")


def encoded_requests(
    kafka: KafkaSettings, count: int
) -> tuple[list[tuple[bytes, bytes]], list[tuple[bytes, bytes]]]:
    """``count`` real requests of the bench's mix as (key, value): encoded, and as JSON."""
    codec = make_codec(kafka)
    avro, json = [], []
    for i in range(count):
        query, language = QUESTIONS[i % len(QUESTIONS)]
        event = new_request(query, language=language, requested_by="bench")
        key = event.run_id.encode()
        avro.append((key, codec.encode(event)))
        json.append((key, fastjson.dumps_bytes(event.to_json())))
    return avro, json


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
        return [event]

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


def run(
    kafka: KafkaSettings,
    count: int = 50_000,
    order: int = 0,
    profile_to: Path | None = None,
) -> dict[str, Any]:
    """Every loop over one fresh input topic; ``order`` rotates which one goes first."""
    tag = uuid.uuid4().hex[:8]
    names = {
        s: f"bench.runtime.{tag}.{s}"
        for s in ("in", "in-json", "out-tb", "out-raw", "out-fastavro", "out-quix", "dlq")
    }
    ensure_topics(kafka, {n: {} for n in names.values()}, StackSettings().partitions)
    runtime = RuntimeSettings.for_service("bench_runtime")
    try:
        avro, json = encoded_requests(kafka, count)
        _fill(kafka, names["in"], avro)
        _fill(kafka, names["in-json"], json)

        def eos(out: str, forward: eos_loops.Forward) -> dict[str, Any]:
            return eos_loops.eos_loop(
                kafka, runtime, in_topic=names["in"], out_topic=out, count=count, forward=forward
            )

        measure: dict[str, Callable[[], dict[str, Any]]] = {
            "tracebound": lambda: tracebound_loop(
                kafka,
                in_topic=names["in"],
                out_topic=names["out-tb"],
                dead_letters=names["dlq"],
                count=count,
                profile_to=profile_to,
            ),
            "raw": lambda: eos(names["out-raw"], eos_loops.forward_bytes),
            "fastavro": lambda: eos(
                names["out-fastavro"], eos_loops.fastavro_forward("DiagnosisRequested")
            ),
            "quix": lambda: quix_bench.quix_loop(
                kafka,
                in_topic=names["in-json"],
                out_topic=names["out-quix"],
                count=count,
                interval_s=runtime.commit_interval_ms / 1000,
            ),
        }
        turn = order % len(LOOPS)
        done = {name: measure[name]() for name in (*LOOPS[turn:], *LOOPS[:turn])}
    finally:
        _delete_topics(kafka, list(names.values()))
    tb = done["tracebound"]["messages_per_second"]
    ratios = {
        name: round(tb / done[name]["messages_per_second"], 4)
        for name in LOOPS[1:]
        if "messages_per_second" in done[name]
    }
    log(
        "runtime: "
        + ", ".join(f"{n} {done[n].get('messages_per_second', math.nan):.0f}" for n in LOOPS)
        + " msg/s; tracebound / "
        + ", ".join(f"{n} {r:.2f}" for n, r in ratios.items())
    )
    return {
        **done,
        "ratio": ratios,
        "commit_interval_ms": runtime.commit_interval_ms,
        "commit_max_messages": runtime.commit_max_messages,
        "message_bytes_mean": round(sum(len(v) for _, v in avro) / count, 1),
        "json_bytes_mean": round(sum(len(v) for _, v in json) / count, 1),
    }
