"""Co-partitioning as a checked rule: every run-keyed topic has one partition count.

Events are keyed by ``run_id``, so a run sits on partition ``hash(run_id) % N`` of
each stage topic, and every replica of a role owns whole runs. If one stage topic
has another count, a run's events at that stage spread over partitions other
replicas own: two composer replicas can each answer the same run. Roles check the
rule when they start and while they run, and refuse to go on when it is broken;
the way to change a count is to drain the pipeline and change every topic alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tracebound.errors import ConfigError


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


def _have(n: int) -> str:
    return "has" if n == 1 else "have"
