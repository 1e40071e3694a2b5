"""The loop's Kafka clients: one replica's transactional producer and its consumer.

They are built together: the consumer's static member id is the producer's
transactional id, so a restarted replica fences its predecessor on both. While
the cluster is unreachable they are built again with back-off, until stopped.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import KafkaException

from tracebound import kafka as edge
from tracebound.runtime.batch import MAX_RECORD_BYTES
from tracebound.settings import KafkaSettings, RuntimeSettings

log = logging.getLogger("tracebound.runtime")


def max_record_bytes(kafka: KafkaSettings) -> int:
    """The producer's ``message.max.bytes`` (librdkafka's default unless set)."""
    try:
        return int(kafka.extra.get("message.max.bytes", MAX_RECORD_BYTES))
    except ValueError:
        return MAX_RECORD_BYTES


def build(
    kafka: KafkaSettings,
    transactional_id: str,
    group: str,
    runtime: RuntimeSettings,
    consumer_config: Mapping[str, str],
) -> tuple[Any, Any]:
    """``(producer, consumer)``: the producer's transactions initialised, nothing subscribed."""
    producer = edge.transactional_producer(kafka, transactional_id, runtime.transaction_timeout_ms)
    producer.init_transactions(runtime.transaction_timeout_ms / 1000)
    config = {**edge.member_config(transactional_id), **consumer_config}
    return producer, edge.consumer(kafka, transactional_id, group=group, config=config)


def close(consumer: Any) -> None:
    """Leave the group; a failure is logged, never raised (the clients are dropped anyway)."""
    if consumer is None:
        return
    try:
        consumer.close()
    except (KafkaException, RuntimeError):
        log.warning("consumer close failed", exc_info=True)


def connect(
    build_clients: Callable[[], None],
    close_clients: Callable[[], None],
    stop: threading.Event,
    runtime: RuntimeSettings,
) -> None:
    """Build the clients, retrying with back-off while the cluster is unreachable.

    Raises the last ``KafkaException`` when ``stop`` is set while waiting.
    """
    backoff = runtime.retry_backoff_initial_ms / 1000
    while True:
        try:
            build_clients()
            return
        except KafkaException as exc:
            close_clients()
            log.warning("cannot start Kafka clients (%s); retrying in %.1fs", exc, backoff)
            if stop.wait(backoff):
                raise
            backoff = min(backoff * 2, runtime.retry_backoff_max_ms / 1000)
