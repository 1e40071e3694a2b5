"""Offsets held by a transaction its coordinator has forgotten, and the sweep that frees them.

Seen with Kafka 4.4 on one broker stopped (SIGTERM) while a role committed: the
transaction coordinator decided the commit and recorded it complete, yet no
marker reached the transaction's partitions. Its records stay open on the role's
output partitions (a ``read_committed`` reader stops before them, at the last
stable offset) and its input offsets stay pending in the role's group: the offset
fetch of a ``read_committed`` member requires stable offsets, is answered
UNSTABLE_OFFSET_COMMIT and is retried for ever. Nothing on the broker ends it:
the coordinator believes the transaction complete, so no timeout aborts it. The
member holds its partitions and reads nothing, and its lag looks like zero.

The producer id of the transaction can end it: a later transaction of the same
``transactional.id`` that touches those partitions writes markers that close the
forgotten one too. The sweep is such a transaction, aborted: one empty record on
every output partition (a ``read_committed`` reader never sees it), the group's
offsets (so its pending ones are dropped), then abort. The forgotten records are
aborted with it and their inputs are read again from the offsets that were
stable: nothing lost, nothing doubled.

It runs only on proof: partitions that gave nothing since they were assigned for
:data:`SILENT_S`, whose offsets the group coordinator still calls unstable
``confirm_s`` later, longer than any live transaction may stay open (the
transaction timeout aborts those). A sweep ends only this replica's transactions;
offsets held by another ``transactional.id`` stay unstable, and the warning says so.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, KafkaException, TopicPartition

from tracebound import kafka as edge
from tracebound.kafka import Key
from tracebound.runtime.metrics import ServiceMetrics
from tracebound.runtime.service import ServiceSpec
from tracebound.settings import KafkaSettings, RuntimeSettings

log = logging.getLogger("tracebound.runtime")

SILENT_S = 30.0  # nothing read from a partition since it was assigned, for this long
CHECK_EVERY_S = 10.0
CONFIRM_MARGIN_S = 10.0  # past the transaction timeout, before unstable counts as forgotten
CALL_TIMEOUT_S = 10.0
# The sweep's records carry it, for a reader of uncommitted records to tell them apart.
SWEEP_HEADERS: list[tuple[str, str | bytes | None]] = [("tracebound-sweep", b"")]


class OffsetsWatch:
    """Which silent partitions to ask about, and when their unstable offsets are proven stuck."""

    def __init__(
        self, confirm_s: float, silent_s: float | None = None, every_s: float | None = None
    ) -> None:
        self._confirm_s = confirm_s
        self._silent_s = SILENT_S if silent_s is None else silent_s
        self._every_s = CHECK_EVERY_S if every_s is None else every_s
        self._next = 0.0
        self._silent_since: dict[Key, float] = {}
        self._unstable_since: dict[Key, float] = {}

    def due(self, now: float) -> bool:
        if now < self._next:
            return False
        self._next = now + self._every_s
        return True

    def silent(self, positions: Iterable[TopicPartition], now: float) -> list[Key]:
        """Of the assigned ``positions``, those read nothing from for :data:`SILENT_S`.

        A consumer's position stays invalid until its first message from a partition
        since the partition was assigned.
        """
        current = {(tp.topic, tp.partition): tp.offset for tp in positions}
        for key in [k for k in self._silent_since if current.get(k, 0) >= 0]:
            del self._silent_since[key]
        for key, offset in current.items():
            if offset < 0:
                self._silent_since.setdefault(key, now)
        return sorted(k for k, t in self._silent_since.items() if now - t >= self._silent_s)

    def proven(self, unstable: set[Key], now: float) -> list[Key]:
        """The ``unstable`` partitions that have stayed so for ``confirm_s`` (then forgotten)."""
        for key in [k for k in self._unstable_since if k not in unstable]:
            del self._unstable_since[key]
        for key in sorted(unstable - self._unstable_since.keys()):
            self._unstable_since[key] = now
            log.warning(
                "offsets of %s[%d] are unstable: a transaction holding them is still open;"
                " it is swept in %.0fs if it stays so",
                *key,
                self._confirm_s,
            )
        stuck = sorted(k for k, t in self._unstable_since.items() if now - t >= self._confirm_s)
        self.forget(stuck)
        return stuck

    def forget(self, keys: Iterable[Key]) -> None:
        """Partitions assigned, revoked or lost: their watch starts over."""
        for key in keys:
            self._silent_since.pop(key, None)
            self._unstable_since.pop(key, None)


def _ask(admin: Any, group: str, keys: Sequence[Key], stable: bool, timeout_s: float) -> Any:
    """The future of ``group``'s offsets of ``keys`` (``stable``: as a read_committed member)."""
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(t, p) for t, p in keys])
    futures = admin.list_consumer_group_offsets(
        [request], require_stable=stable, request_timeout=timeout_s
    )
    return futures[group]


def unstable(partitions: Iterable[Any]) -> set[Key]:
    """Of an offset fetch's ``partitions``, those a pending transaction holds."""
    return {
        (tp.topic, tp.partition)
        for tp in partitions
        if tp.error is not None and tp.error.code() == KafkaError.UNSTABLE_OFFSET_COMMIT
    }


class Sweeper:
    """One loop's watch for forgotten transactions of its group, and their sweep."""

    def __init__(
        self,
        kafka: KafkaSettings,
        member: str,
        spec: ServiceSpec,
        runtime: RuntimeSettings,
        metrics: ServiceMetrics,
    ) -> None:
        self.watch = OffsetsWatch(runtime.transaction_timeout_ms / 1000 + CONFIRM_MARGIN_S)
        self._metrics = metrics
        self._kafka, self._member, self._group = kafka, member, spec.name
        self._outputs = tuple(dict.fromkeys((*spec.output_topics, spec.dead_letter_topic)))
        self._admin: Any = None
        # A check's future, when it was asked, and what about.
        self._asked: tuple[Any, float, list[Key]] | None = None
        self._swept: set[Key] = set()  # swept, and not seen stable since

    def stuck(self, consumer: Any, now: float) -> list[Key]:
        """The partitions proven held by a forgotten transaction, once a check is answered.

        Never waits on the broker: a check asks the group coordinator and a later turn
        reads the answer (one left unanswered past :data:`CALL_TIMEOUT_S` is dropped).
        """
        if self._asked is not None:
            return self._answered(*self._asked, now)
        if self.watch.due(now):
            self._ask_about_silent(consumer, now)
        return []

    def _answered(self, future: Any, asked_at: float, keys: list[Key], now: float) -> list[Key]:
        """The asked check's verdict once answered; nothing while it is out."""
        if not future.done():
            if now - asked_at > CALL_TIMEOUT_S:
                self._asked = None
            return []
        self._asked = None
        try:
            held = unstable(future.result().topic_partitions)
        except KafkaException as exc:  # the broker's trouble, seen elsewhere too
            log.debug("offsets not checked: %s", exc)
            return []
        self._swept -= set(keys) - held
        self._metrics.unstable_offsets.labels(self._group).set(len(held))
        return self._not_swept(self.watch.proven(held, now))

    def _ask_about_silent(self, consumer: Any, now: float) -> None:
        """Ask the group coordinator about the partitions silent long enough, if any."""
        try:
            silent = self.watch.silent(consumer.position(consumer.assignment()), now)
            if silent:
                ask = _ask(self._admin_client(), self._group, silent, True, CALL_TIMEOUT_S)
                self._asked = (ask, now, silent)
                return
        except KafkaException as exc:
            log.debug("offsets not checked: %s", exc)
            return
        self.watch.proven(set(), now)
        self._metrics.unstable_offsets.labels(self._group).set(0)

    def _not_swept(self, stuck: list[Key]) -> list[Key]:
        """``stuck`` less what a sweep of this replica could not free (reported instead)."""
        again = [k for k in stuck if k in self._swept]
        if again:
            log.error(
                "offsets of %s stay unstable after this replica's sweep: a transaction of"
                " another transactional.id holds them (another replica of %s, or a producer"
                " gone for good); find it with kafka-transactions.sh find-hanging and end it"
                " with kafka-transactions.sh abort",
                edge.describe_partitions([TopicPartition(t, p) for t, p in again]),
                self._group,
            )
        return [k for k in stuck if k not in self._swept]

    def _admin_client(self) -> Any:
        if self._admin is None:
            self._admin = edge.admin(self._kafka, self._member)
        return self._admin

    def sweep(self, producer: Any, consumer: Any, stuck: Sequence[Key], timeout_s: float) -> None:
        """Abort a transaction of this producer id over every output partition and the
        group's offsets, closing any of its transactions the coordinator forgot there."""
        counts = edge.partition_counts(consumer, self._outputs, timeout_s)
        # The offsets named are dropped with the abort; the stable ones, should they not be.
        offsets = [
            TopicPartition(tp.topic, tp.partition, max(tp.offset, 0))
            for tp in _ask(self._admin_client(), self._group, stuck, False, timeout_s)
            .result(timeout_s)
            .topic_partitions
        ]
        producer.begin_transaction()
        for topic in self._outputs:
            for partition in range(counts.get(topic, 0)):
                producer.produce(topic, value=None, partition=partition, headers=SWEEP_HEADERS)
        producer.send_offsets_to_transaction(offsets, consumer.consumer_group_metadata(), timeout_s)
        producer.abort_transaction(timeout_s)
        self._swept.update(stuck)
        self._metrics.swept.labels(self._group).inc()
        log.warning(
            "swept a forgotten transaction: aborted this replica's open transactions on %s"
            " and its pending offsets of %s",
            ", ".join(self._outputs),
            edge.describe_partitions([TopicPartition(t, p) for t, p in stuck]),
        )
