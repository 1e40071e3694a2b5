"""Every Kafka client of the project is built here, with the defaults they share.

Consumers read ``read_committed`` (an aborted transaction's output never
happened), never commit on their own (progress is a transaction, a checkpoint
in PostgreSQL, or nothing for a one-off read), and keep a small prefetch: a
process reading many partitions at once (a projection catching up, a replay)
would otherwise queue up to 64 MiB per consumer before handing out a message;
with so small a queue, the consumer fetches again within milliseconds of its
queue having room, not after librdkafka's one-second back-off.
The session settings of a group member are shared too (a dead member is noticed
within seconds); a caller adds only what is particular to it, such as
:data:`READ_TO_END` for a read that must know where a partition ends. Every
client refreshes its topics' metadata every 10 s (librdkafka's default is five
minutes): after a partition-count change, producers agree on a run's new
partition and groups hand the new partitions out within seconds.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from tracebound.settings import KafkaSettings

# How soon a client sees a topic's new partitions (and moved leaders).
METADATA_REFRESH = {"topic.metadata.refresh.interval.ms": "10000"}
CONSUMER_DEFAULTS: dict[str, str] = {
    **METADATA_REFRESH,
    "enable.auto.commit": "false",
    "enable.auto.offset.store": "false",
    "isolation.level": "read_committed",
    "auto.offset.reset": "earliest",
    "fetch.wait.max.ms": "50",
    "queued.max.messages.kbytes": "8192",
    # Fetch again as soon as a batch was taken from a full queue: librdkafka otherwise
    # stops fetching for this long (1 s by default) whenever its queue is full, which a
    # reader slower than the broker (a catch-up, a rebuild, a replay) hits again and again.
    "fetch.queue.backoff.ms": "5",
    "fetch.max.bytes": "8388608",
    "max.partition.fetch.bytes": "524288",
    "session.timeout.ms": "10000",
    "heartbeat.interval.ms": "2000",
}
PRODUCER_DEFAULTS: dict[str, str] = {**METADATA_REFRESH, "enable.idempotence": "true"}
# Retries of a transactional producer (see :func:`transactional_producer`).
TRANSACTION_RETRY = {"retry.backoff.ms": "5", "retry.backoff.max.ms": "500"}
# Reading to the end offsets needs to hear that a partition has nothing more.
READ_TO_END = {"enable.partition.eof": "true"}


def member_config(member: str) -> dict[str, str]:
    """What a long-lived group member adds: its stable identity and gentle rebalances.

    ``group.instance.id`` (static membership) lets a replica restart within the
    session timeout without any rebalance; cooperative-sticky assignment moves
    only the partitions that must move when a member joins or leaves, so the
    other replicas keep working through it. Every member of one group must use
    it: a group cannot mix eager and cooperative members.
    """
    return {"group.instance.id": member, "partition.assignment.strategy": "cooperative-sticky"}


def describe_partitions(partitions: Sequence[TopicPartition]) -> str:
    """``topic[0,1,5] other[2]`` for a log line; ``none`` when empty."""
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    parts = [f"{t}[{','.join(map(str, sorted(ps)))}]" for t, ps in sorted(by_topic.items())]
    return " ".join(parts) or "none"


def client_id(purpose: str) -> str:
    """``tracebound-<purpose>``: what the broker's logs and quotas see."""
    return f"tracebound-{purpose}"


def consumer(
    kafka: KafkaSettings,
    purpose: str,
    *,
    group: str | None = None,
    config: Mapping[str, str] | None = None,
) -> Consumer:
    """A consumer with the shared defaults.

    ``group`` is the consumer group a subscribing member joins. Without one the
    consumer is for assigned partitions only; the client still insists on a
    ``group.id``, so a throw-away one is set that is never joined and never
    committed to.
    """
    return Consumer(
        {
            **kafka.client_config(),
            **CONSUMER_DEFAULTS,
            "client.id": client_id(purpose),
            "group.id": group or f"{client_id(purpose)}-{uuid.uuid4().hex[:8]}",
            **(config or {}),
        }
    )


def admin(kafka: KafkaSettings, purpose: str) -> AdminClient:
    """An admin client of a process (the stack's own tooling has :mod:`tracebound.stack`)."""
    return AdminClient({**kafka.client_config(), "client.id": client_id(purpose)})


def producer(
    kafka: KafkaSettings, purpose: str, *, config: Mapping[str, str] | None = None
) -> Producer:
    """An idempotent producer (a retried send is never written twice)."""
    return Producer(
        {
            **kafka.client_config(),
            **PRODUCER_DEFAULTS,
            "client.id": client_id(purpose),
            **(config or {}),
        }
    )


def transactional_producer(
    kafka: KafkaSettings, transactional_id: str, timeout_ms: int
) -> Producer:
    """The producer of an exactly-once loop; a stable id fences a zombie predecessor.

    A transaction begun right after the previous commit often finds the
    coordinator still writing that commit's markers (a commit returns once it is
    decided, before its markers are written): its first requests are answered
    CONCURRENT_TRANSACTIONS. librdkafka retries ``AddOffsetsToTxn`` after
    ``retry.backoff.ms``, whose 100 ms default would make that wait longer than
    the whole transaction; the backoff starts at a few milliseconds instead and
    still grows (to ``retry.backoff.max.ms``) while a broker stays away.
    (``AddPartitionsToTxn`` is retried after a fixed 20 ms whatever the settings.)
    """
    timeout = str(timeout_ms)
    return producer(
        kafka,
        transactional_id,
        config={
            "transactional.id": transactional_id,
            "transaction.timeout.ms": timeout,
            "message.timeout.ms": timeout,
            "linger.ms": "5",
            "compression.type": "lz4",
            **TRANSACTION_RETRY,
        },
    )


def produce(
    producer: Producer,
    topic: str,
    key: bytes | None,
    value: bytes,
    headers: list[tuple[str, str | bytes | None]] | None = None,
) -> None:
    """Produce one message, serving delivery reports while the local queue is full."""
    while True:
        try:
            producer.produce(topic, value=value, key=key, headers=headers)
            producer.poll(0)
            return
        except BufferError:
            producer.poll(0.05)
