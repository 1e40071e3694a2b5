"""How many input records a consumer group has not processed yet, for ``status``.

High watermark minus committed offset is not that number with transactional
producers: every committed transaction ends with a control marker that takes an
offset, so a group that has processed everything still sits one offset (or more)
before the end of each partition it reads. The records themselves are counted
instead: a ``read_committed`` read from the committed offsets to the end offsets
(the last stable offsets, as a ``read_committed`` consumer is told them) delivers
exactly the records still to process, without markers and aborted output.

The read is bounded: past :data:`MAX_SCANNED` offsets, or when it does not finish
in time, the offset distance is reported instead, marked as an upper bound.
"""

from __future__ import annotations

from dataclasses import dataclass

from confluent_kafka import KafkaException, TopicPartition

from tracebound import kafka as edge
from tracebound.errors import TransientError
from tracebound.settings import KafkaSettings

MAX_SCANNED = 10_000
SCAN_TIMEOUT_S = 10.0


@dataclass(frozen=True, slots=True)
class Lag:
    records: int
    exact: bool  # False: ``records`` is the offset distance, an upper bound


def group_lag(kafka: KafkaSettings, group: str, topic_names: tuple[str, ...]) -> Lag | None:
    """Records of ``topic_names`` after ``group``'s committed offsets; None if unknown.

    A service without input topics (the ingest) cannot fall behind: its lag is 0.
    The consumer only asks for the group's offsets and reads assigned partitions; it
    never joins the group and never commits.
    """
    if not topic_names:
        return Lag(0, True)
    consumer = edge.consumer(kafka, "status", group=group, config=edge.READ_TO_END)
    try:
        marks = edge.watermarks(consumer, edge.partitions(consumer, topic_names))
        committed = consumer.committed([TopicPartition(*key) for key in marks], timeout=5)
        # No commit yet, or one behind the retained data: from the first record kept.
        starts = {
            (tp.topic, tp.partition): max(tp.offset, marks[(tp.topic, tp.partition)][0])
            for tp in committed
        }
        ends = {key: high for key, (_low, high) in marks.items()}
        distance = sum(max(ends[key] - start, 0) for key, start in starts.items())
        if distance == 0:
            return Lag(0, True)
        if distance > MAX_SCANNED:
            return Lag(distance, False)
        try:
            batches = edge.read_range(consumer, starts, ends, timeout_s=SCAN_TIMEOUT_S)
            return Lag(sum(len(batch) for batch in batches), True)
        except TransientError:
            return Lag(distance, False)
    except KafkaException:
        return None
    finally:
        consumer.close()
