"""The Kafka edge: every client, offset lookup, read loop and error verdict in one place.

- :mod:`~tracebound.kafka.clients`: consumers and producers with the shared defaults;
- :mod:`~tracebound.kafka.offsets`: partitions, watermarks, a point in time, assignment;
- :mod:`~tracebound.kafka.reading`: a batch of what is ready, a range read to its end,
  decoding;
- :mod:`~tracebound.kafka.errors`: what an error means (end, fatal, abortable, retriable);
- :mod:`~tracebound.kafka.lag`: the consumer-lag gauge.
"""

from __future__ import annotations

from tracebound.kafka.clients import (
    READ_TO_END,
    admin,
    consumer,
    describe_partitions,
    member_config,
    produce,
    producer,
    transactional_producer,
)
from tracebound.kafka.copartition import (
    CopartitionWatch,
    NotCopartitioned,
    check_copartitioned,
    partition_counts,
)
from tracebound.kafka.errors import (
    Severity,
    classify,
    consumer_error,
    replaced_member,
    severity_of,
)
from tracebound.kafka.lag import LagGauge
from tracebound.kafka.offsets import (
    Key,
    Offsets,
    PartitionFollower,
    assign,
    assign_whole,
    end_offsets,
    offsets_since,
    partitions,
    watermarks,
)
from tracebound.kafka.reading import RangeReader, decoded, next_batch, read_range

__all__ = [
    "READ_TO_END",
    "CopartitionWatch",
    "Key",
    "LagGauge",
    "NotCopartitioned",
    "Offsets",
    "PartitionFollower",
    "RangeReader",
    "Severity",
    "admin",
    "assign",
    "assign_whole",
    "check_copartitioned",
    "classify",
    "consumer",
    "consumer_error",
    "decoded",
    "describe_partitions",
    "end_offsets",
    "member_config",
    "next_batch",
    "offsets_since",
    "partition_counts",
    "partitions",
    "produce",
    "producer",
    "read_range",
    "replaced_member",
    "severity_of",
    "transactional_producer",
    "watermarks",
]
