"""The exactly-once loops the runtime is measured against, written as plainly as possible.

Both read an input topic in a consumer group of their own and forward every
message to an output topic in Kafka transactions, committing with the
runtime's own policy (:class:`~tracebound.runtime.commit_policy.CommitPolicy`:
by size, by time, or when input runs dry) and the runtime's transactional
producer settings:

- raw: the bytes forwarded as read;
- fastavro: each value decoded and encoded again with a pre-parsed schema, the
  least any Avro loop in Python can do per message ("the fastavro floor").

Throughput is the count over the time from the first message read to the last
transaction committed, so group join and start-up are left out.
"""

from __future__ import annotations

import io
import math
import time
import uuid
from collections.abc import Callable
from typing import Any

from fastavro import schemaless_reader, schemaless_writer

from tracebound import kafka as edge
from tracebound.codec import schemas
from tracebound.runtime.batch import next_offsets
from tracebound.runtime.commit_policy import CommitPolicy
from tracebound.settings import KafkaSettings, RuntimeSettings

LOOP_TIMEOUT_S = 180.0
HEADER_LEN = 10  # Avro single-object header: C3 01 + 8-byte fingerprint
Forward = Callable[[bytes], bytes]


def forward_bytes(value: bytes) -> bytes:
    return value


def fastavro_forward(event: str) -> Forward:
    """Decode and encode one single-object value of ``event`` with a pre-parsed schema."""
    parsed = schemas.current(event).parsed

    def forward(value: bytes) -> bytes:
        record = schemaless_reader(io.BytesIO(value[HEADER_LEN:]), parsed, None)
        out = io.BytesIO()
        out.write(value[:HEADER_LEN])
        schemaless_writer(out, parsed, record)
        return out.getvalue()

    return forward


def eos_loop(
    kafka: KafkaSettings,
    runtime: RuntimeSettings,
    *,
    in_topic: str,
    out_topic: str,
    count: int,
    forward: Forward,
) -> dict[str, Any]:
    """Forward ``count`` messages exactly once; messages per second."""
    policy = CommitPolicy.of("bench-eos", runtime)
    member = f"bench-eos-{uuid.uuid4().hex[:8]}"
    producer = edge.transactional_producer(kafka, member, runtime.transaction_timeout_ms)
    producer.init_transactions(30)
    consumer = edge.consumer(kafka, member, group=member)
    consumer.subscribe([in_topic])
    handled, first = 0, math.nan
    pending: list[Any] = []
    opened = 0.0
    deadline = time.monotonic() + LOOP_TIMEOUT_S
    try:
        while handled < count and time.monotonic() < deadline:
            wait = 0.0 if pending else runtime.batch_timeout_ms / 1000
            batch = [
                m for m in edge.next_batch(consumer, runtime.batch_size, wait) if m.error() is None
            ]
            if batch:
                if math.isnan(first):
                    first = time.perf_counter()
                if not pending:
                    opened = time.perf_counter()
                    producer.begin_transaction()
                for m in batch:
                    edge.produce(producer, out_topic, m.key(), forward(m.value()))
                pending += batch
            if policy.due(len(pending), opened, time.perf_counter(), bool(batch)):
                producer.send_offsets_to_transaction(
                    next_offsets(pending), consumer.consumer_group_metadata(), 30
                )
                producer.commit_transaction(30)
                handled += len(pending)
                pending = []
        last = time.perf_counter()
    finally:
        consumer.close()
    if handled < count:
        raise RuntimeError(f"exactly-once loop handled {handled}/{count} in time")
    return {
        "messages": count,
        "seconds": round(last - first, 3),
        "messages_per_second": round(count / (last - first), 1),
    }
