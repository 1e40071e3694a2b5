"""Group membership repairs the consumer group protocol does not make on its own.

Two holes, both seen with static membership (``group.instance.id``) and
cooperative-sticky assignment when a broker dies:

- **Orphaned partitions after a rebuild.** A rebalance's first round tells a member
  to give up some partitions; the second round, which hands them to another
  member, starts only when that member has revoked them and rejoined. A member
  wedged in a transaction (its coordinator's broker gone) serves no callback, so
  the loop abandons its clients. The new consumer joins with the same
  ``group.instance.id``; the coordinator, seeing a known static member of a
  stable group, gives it the stored assignment without a rebalance: the first
  round's, which lacks what it was told to give up. Nobody rejoins, and those
  partitions stay with no member until something else rebalances the group (the
  broker's return, a replica joining). So after a rebuild, once the new consumer
  has its first assignment, the loop leaves and subscribes again: the rejoin
  carries what the member now owns, which differs from the stored metadata, and
  the coordinator rebalances the group, handing every partition out.
- **A twin.** A static member replaced by another consumer with its id once may be
  the coordinator's confusion after a broker restart; one replaced again and again
  shares its id with another live process (:class:`~tracebound.replica.ReplicaInUse`).
- **No assignment after a loss.** A member whose session timed out is told its
  partitions are lost and rejoins; librdkafka can fail to get an assignment back
  (confluentinc/librdkafka#3437) and stay a member of nothing. When no assignment
  (even an empty one) follows a loss within :data:`LOST_REBUILD_S`, the loop
  rebuilds its clients.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable
from typing import Any

from tracebound.replica import ReplicaInUse

log = logging.getLogger("tracebound.runtime")

# Three session timeouts (10 s each, ``tracebound.kafka.CONSUMER_DEFAULTS``): a
# coordinator that moved has long been found by then.
LOST_REBUILD_S = 30.0
# Replaced this often within the window: another live process has our replica id.
REPLACED_LIMIT, REPLACED_WINDOW_S = 3, 300.0


class Repair(enum.Enum):
    REJOIN = "rejoin"  # leave and subscribe again
    REBUILD = "rebuild"  # new clients


class _Rejoin(enum.Enum):
    """Where rebuilt clients are on their way to the one rejoin."""

    IDLE = "idle"
    AWAITING_ASSIGNMENT = "awaiting the first assignment"
    DUE = "due"


def rejoin(consumer: Any, subscribe: Callable[[], None]) -> None:
    """Leave the group and subscribe again: the coordinator rebalances the group."""
    log.warning("rejoining the group after the rebuild: no partition may stay unowned")
    consumer.unsubscribe()
    subscribe()


class GroupWatch:
    """Tracks one loop's assignments; :meth:`due` says which repair is due, if any."""

    def __init__(self, lost_rebuild_s: float = LOST_REBUILD_S) -> None:
        self._lost_rebuild_s = lost_rebuild_s
        self._rejoin = _Rejoin.IDLE
        self._lost_at: float | None = None
        self._replacements: list[float] = []

    def rebuilt(self) -> None:
        """New clients: rejoin once they have their first assignment."""
        self._rejoin = _Rejoin.AWAITING_ASSIGNMENT
        self._lost_at = None

    def assigned(self) -> None:
        self._lost_at = None
        if self._rejoin is _Rejoin.AWAITING_ASSIGNMENT:
            self._rejoin = _Rejoin.DUE

    def lost(self, now: float) -> None:
        if self._lost_at is None:
            self._lost_at = now

    def due(self, now: float) -> Repair | None:
        """The repair to make now (each is reported once)."""
        if self._rejoin is _Rejoin.DUE:
            self._rejoin = _Rejoin.IDLE
            return Repair.REJOIN
        if self._lost_at is not None and now - self._lost_at >= self._lost_rebuild_s:
            self._lost_at = None
            log.error("no assignment followed the lost partitions; rebuilding the clients")
            return Repair.REBUILD
        return None

    def replaced(self, member: str, now: float) -> None:
        """Our static membership went to another consumer with our ``group.instance.id``.

        Once may be the group coordinator's confusion after a broker restart, so the
        clients are rebuilt; a process that keeps being replaced shares its id with
        another live one, and rejoining would only replace that one in turn, forever.
        """
        self._replacements = [t for t in self._replacements if now - t < REPLACED_WINDOW_S]
        self._replacements.append(now)
        if len(self._replacements) >= REPLACED_LIMIT:
            raise ReplicaInUse(member, "a member of the group on another host")
        log.warning("group membership %s taken by another consumer; rejoining", member)
