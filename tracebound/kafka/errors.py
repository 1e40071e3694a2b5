"""What a Kafka error means for the caller: one classification for every client.

- end of partition: not an error, a read to the end is told it is there;
- fatal (e.g. a fenced producer): the clients are unusable, build new ones;
- abortable: abort the open transaction and read the batch again;
- retriable: the same call may succeed if tried again;
- anything else: logged, and the client carries on by itself.
"""

from __future__ import annotations

import enum
import logging
from typing import Any

from confluent_kafka import KafkaError, KafkaException

log = logging.getLogger("tracebound.kafka")


class Severity(enum.Enum):
    END_OF_PARTITION = "end of partition"
    FATAL = "fatal"
    ABORTABLE = "abortable"
    RETRIABLE = "retriable"
    OTHER = "other"


def classify(err: KafkaError) -> Severity:
    if err.code() == KafkaError._PARTITION_EOF:
        return Severity.END_OF_PARTITION
    if err.fatal() or err.code() == KafkaError._FATAL:  # a consumer's fatal error is _FATAL
        return Severity.FATAL
    if err.txn_requires_abort():
        return Severity.ABORTABLE
    if err.retriable():
        return Severity.RETRIABLE
    return Severity.OTHER


def severity_of(exc: KafkaException) -> Severity:
    """The classification of a raised error (its first argument is the ``KafkaError``)."""
    err = exc.args[0] if exc.args else None
    return classify(err) if isinstance(err, KafkaError) else Severity.OTHER


def consumer_error(message: Any) -> Severity | None:
    """None for a message with data; else how bad its error is (logged unless an end)."""
    err = message.error()
    if err is None:
        return None
    severity = classify(err)
    if severity is Severity.FATAL:
        log.error("fatal consumer error: %s", err.str())
    elif severity is not Severity.END_OF_PARTITION:
        log.warning("consumer error: %s", err.str())
    return severity


def replaced_member(message: Any) -> bool:
    """The broker fenced this static member: another consumer joined with its instance id.

    librdkafka raises it as a fatal consumer error (code ``_FATAL``, the broker's
    ``FENCED_INSTANCE_ID`` only in the text), so the text is where the cause is named.
    """
    err = message.error()
    if err is None:
        return False
    if err.code() == KafkaError.FENCED_INSTANCE_ID:
        return True
    return err.code() == KafkaError._FATAL and "same group.instance.id" in err.str()
