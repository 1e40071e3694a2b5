"""Which runs this sentinel replica watches: the partitions its consumer group gives it.

Every replica joins the ``sentinel`` group as a static, cooperative-sticky member
(like the roles) subscribed to the requests topic alone. The stage topics are
co-partitioned, so partition *p* of the requests topic stands for partition *p*
of every watched topic: when the group assigns it, a second consumer outside the
group is assigned *p* of each watched topic, from the look-back point, and reads
them. The member itself never reads (its partitions stay paused); it only holds
the share, so one replica owns a run's every stage and a run is watched once.

A partition's runs are judged only once the reader has reached the end of every
watched partition of it: until then a run whose answer is yet to be read would look
stalled, so a replica starting on an hour of history would give up on answered runs.

A partition-count change reaches the member through its subscription: the group
hands the new partitions out and their watched partitions are read from their
first offset. A member built again after a fatal error rejoins the group once it
has its first assignment, and one whose partitions were lost and never followed
by an assignment is built again, as the roles' are
(:mod:`tracebound.runtime.membership`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable
from typing import Any

from confluent_kafka import TopicPartition

from services.sentinel.watch import SERVICE, WATCHED
from tracebound import kafka as edge
from tracebound import topics
from tracebound.runtime.bounded import close_within
from tracebound.runtime.membership import GroupWatch, Repair, rejoin
from tracebound.settings import KafkaSettings

log = logging.getLogger("tracebound.sentinel")


class Ends:
    """Which partition numbers still have a watched partition not yet read to its end."""

    def __init__(self) -> None:
        self._behind: dict[int, set[tuple[str, int]]] = {}

    def expect(self, keys: Iterable[tuple[str, int]]) -> None:
        """``keys`` (topic, partition) were just assigned: each must be read to its end."""
        for topic, number in keys:
            self._behind.setdefault(number, set()).add((topic, number))

    def reached(self, topic: str, number: int) -> None:
        behind = self._behind.get(number, set())
        behind.discard((topic, number))
        if not behind:
            self._behind.pop(number, None)

    def drop(self, numbers: Iterable[int]) -> None:
        for number in numbers:
            self._behind.pop(number, None)

    def settled(self, owned: set[int]) -> set[int]:
        return owned - self._behind.keys()


class Ownership:
    """The group member holding this replica's partitions, and the reader of their topics."""

    def __init__(
        self, kafka: KafkaSettings, member_id: str, lookback_s: float, *, rebuilt: bool = False
    ) -> None:
        self.lookback_s = lookback_s
        self.owned: set[int] = set()
        self._released: set[int] = set()
        self._ends = Ends()
        self._lock = threading.Lock()
        self._group = GroupWatch()
        if rebuilt:
            self._group.rebuilt()
        self.member: Any = edge.consumer(
            kafka, member_id, group=SERVICE, config=edge.member_config(member_id)
        )
        self.reader: Any = edge.consumer(kafka, f"{member_id}-watch", config=edge.READ_TO_END)
        self._subscribe()

    def _subscribe(self) -> None:
        self.member.subscribe(
            [topics.REQUESTS],
            on_assign=self._assigned,
            on_revoke=self._released_partitions,
            on_lost=self._lost,
        )

    def poll(self) -> list[Any]:
        """Serve the group (heartbeats, rebalances); returns its error events, if any."""
        message = self.member.poll(0)
        return [] if message is None else [message]

    def repair(self) -> bool:
        """Rejoin the group if due; True when this member must be built again instead."""
        due = self._group.due(time.monotonic())
        if due is Repair.REJOIN:
            rejoin(self.member, self._subscribe)
        return due is Repair.REBUILD

    def take_released(self) -> set[int]:
        """Partitions given up since the last call: their runs are someone else's now."""
        with self._lock:
            released, self._released = self._released, set()
        return released

    def read(self, messages: list[Any]) -> None:
        """Note the ends of partitions the reader reached among ``messages``."""
        for message in messages:
            if message.error() is None:
                continue
            if edge.consumer_error(message) is edge.Severity.END_OF_PARTITION:
                with self._lock:
                    self._ends.reached(message.topic(), message.partition())

    def settled(self) -> set[int]:
        """The owned partitions whose watched partitions were all read to their end once."""
        with self._lock:
            return self._ends.settled(self.owned)

    def group_metadata(self) -> Any:
        return self.member.consumer_group_metadata()

    def progress(self) -> list[TopicPartition]:
        """The reader's position on the owned requests partitions (committed with output).

        Committing them in the transaction of the deadline verdicts ties those
        verdicts to the group generation: a replica that lost its partitions
        without knowing it has its transaction refused.
        """
        owned = [TopicPartition(topics.REQUESTS, p) for p in sorted(self.owned)]
        return [tp for tp in self.reader.position(owned) if tp.offset >= 0] if owned else []

    def close(self) -> None:
        for consumer in (self.member, self.reader):
            consumer.close()

    def abandon(self) -> None:
        """Close a member being replaced, never waiting long on a wedged client."""
        for consumer in (self.member, self.reader):
            close_within(consumer)

    def _lost(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        self._group.lost(time.monotonic())
        self._released_partitions(consumer, partitions)

    def _assigned(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        self._group.assigned()
        consumer.incremental_assign(partitions)
        consumer.pause(partitions)  # the member holds the share; the reader reads
        numbers = {tp.partition for tp in partitions}
        if not numbers:
            return
        existing = set(edge.partitions(self.reader, WATCHED))
        keys = [(t, p) for t in WATCHED for p in sorted(numbers) if (t, p) in existing]
        since_ms = int((time.time() - self.lookback_s) * 1000)
        starts = edge.offsets_since(self.reader, keys, since_ms)
        self.reader.incremental_assign([TopicPartition(t, p, o) for (t, p), o in starts.items()])
        with self._lock:
            self.owned |= numbers
            self._released -= numbers
            self._ends.expect(starts)
        log.info("watching partitions %s", ",".join(map(str, sorted(numbers))))

    def _released_partitions(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        numbers = {tp.partition for tp in partitions}
        assigned = {(tp.topic, tp.partition) for tp in self.reader.assignment()}
        dropped = [TopicPartition(t, p) for t, p in sorted(assigned) if p in numbers]
        if dropped:
            self.reader.incremental_unassign(dropped)
        with self._lock:
            self.owned -= numbers
            self._released |= numbers
            self._ends.drop(numbers)
        log.info("no longer watching partitions %s", ",".join(map(str, sorted(numbers))))
