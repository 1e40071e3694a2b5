"""The sentinel process: watch every stage topic, give up on runs past the deadline.

It needs no exactly-once machinery: it only ever sends deadline verdicts, and a
repeated one is harmless because the composer answers each run once. On start it
re-reads the last ``lookback`` of every watched topic, so runs requested before
that window are not watched (documented limit).
"""

from __future__ import annotations

import logging
import signal
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta

from confluent_kafka import Consumer, Producer, TopicPartition
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from services.sentinel.watch import WATCHED, Watch, deadline_verdict
from tracebound import logs, topics
from tracebound.codec import make_codec
from tracebound.errors import PoisonInput
from tracebound.settings import KafkaSettings

log = logging.getLogger("tracebound.sentinel")


class SentinelSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="TRACEBOUND_SENTINEL_", extra="ignore")

    deadline_s: float = Field(default=300.0, gt=0)
    lookback_s: float = Field(default=3600.0, gt=0)
    tick_s: float = Field(default=1.0, gt=0)


def _start_offsets(consumer: Consumer, since_ms: int) -> list[TopicPartition]:
    meta = consumer.list_topics(timeout=10)
    wanted = [
        TopicPartition(t, p, since_ms)
        for t in WATCHED
        if t in meta.topics
        for p in meta.topics[t].partitions
    ]
    return list(consumer.offsets_for_times(wanted, timeout=10))


def run(settings: SentinelSettings | None = None, kafka: KafkaSettings | None = None) -> int:
    settings = settings or SentinelSettings()
    kafka = kafka or KafkaSettings()
    codec = make_codec(kafka)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    consumer = Consumer(
        {
            **kafka.client_config(),
            "group.id": f"sentinel-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": "false",
            "isolation.level": "read_committed",
            "auto.offset.reset": "latest",
        }
    )
    producer = Producer({**kafka.client_config(), "enable.idempotence": "true"})
    since = int((time.time() - settings.lookback_s) * 1000)
    consumer.assign(_start_offsets(consumer, since))
    deadline = timedelta(seconds=settings.deadline_s)
    watch = Watch(deadline)
    next_tick = time.monotonic()
    log.info("sentinel watching with a %.0fs deadline", settings.deadline_s)
    try:
        while not stop.is_set():
            for msg in consumer.consume(500, settings.tick_s):
                if msg.error() is not None or msg.value() is None:
                    continue
                try:
                    watch.observe(codec.decode(msg.value()))
                except PoisonInput:
                    continue
            if time.monotonic() >= next_tick:
                next_tick = time.monotonic() + settings.tick_s
                for state in watch.overdue(datetime.now(UTC)):
                    verdict = deadline_verdict(state, deadline)
                    producer.produce(
                        topics.VERDICTS,
                        key=state.run_id.encode(),
                        value=codec.encode(verdict, topics.VERDICTS),
                    )
                    log.warning(
                        "run past its deadline; answering as failed", extra={"run_id": state.run_id}
                    )
                producer.poll(0)
    finally:
        producer.flush(30)
        consumer.close()
    return 0


def main() -> int:
    logs.configure()
    return run()
