"""Co-partitioning as a checked rule: every run-keyed topic has one partition count.

Events are keyed by ``run_id``, so a run sits on partition ``hash(run_id) % N`` of
each stage topic, and every replica of a role owns whole runs. If one stage topic
has another count, a run's events at that stage spread over partitions other
replicas own: two composer replicas can each answer the same run. Roles check the
rule when they start and while they run, and refuse to go on when it is broken;
the way to change a count is to drain the pipeline and change every topic alike.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from confluent_kafka import KafkaException

from tracebound import topics
from tracebound.errors import ConfigError

log = logging.getLogger("tracebound.kafka")
CHECK_INTERVAL_S = 30.0  # how often a running role checks the rule again


class NotCopartitioned(ConfigError):
    """The run-keyed topics do not all have the same partition count."""


def partition_counts(client: Any, names: Sequence[str], timeout_s: float) -> dict[str, int]:
    """Partition count of each of ``names`` that exists, from one metadata request."""
    metadata = client.list_topics(timeout=timeout_s)
    return {
        name: len(metadata.topics[name].partitions)
        for name in names
        if name in metadata.topics and metadata.topics[name].error is None
    }


def check_copartitioned(counts: Mapping[str, int]) -> None:
    """Raise :class:`NotCopartitioned` naming the odd topics and how to mend them."""
    if len(set(counts.values())) <= 1:
        return
    tally: dict[int, list[str]] = {}
    for name, count in sorted(counts.items()):
        tally.setdefault(count, []).append(name)
    usual = max(tally, key=lambda count: (len(tally[count]), count))
    odd = "; ".join(
        f"{', '.join(names)} {_have(len(names))} {count}"
        for count, names in sorted(tally.items())
        if count != usual
    )
    n = len(tally[usual])
    raise NotCopartitioned(
        f"the run-keyed topics must all have one partition count (a run's events would"
        f" otherwise reach two replicas): {n} {_have(n)} {usual}, but {odd}."
        " Stop the producers, let the pipeline drain (tracebound status: lag 0), give"
        " every run-keyed topic the same count, then start the roles again"
    )


class CopartitionWatch:
    """The rule checked by a running role: at once, then every :data:`CHECK_INTERVAL_S`."""

    def __init__(self, interval_s: float = CHECK_INTERVAL_S) -> None:
        self._interval_s = interval_s
        self._checked: float | None = None

    def check(self, client: Any, now: float) -> None:
        """Raise :class:`NotCopartitioned` when due and the rule is broken."""
        if self._checked is not None and now < self._checked + self._interval_s:
            return
        try:
            counts = partition_counts(client, topics.copartitioned(), 10.0)
        except KafkaException as exc:  # the broker's trouble, seen elsewhere too
            log.debug("partition counts not read: %s", exc)
            return
        self._checked = now
        check_copartitioned(counts)


def _have(n: int) -> str:
    return "has" if n == 1 else "have"
