"""Causal order for a run's event stream.

One reader follows every stage topic and topics are not read in lockstep, so a
later stage's event can be read before the event that caused it. Every event
names its cause (``causation_id``); an event is released only after its cause,
or when its cause has not shown up within ``hold_s`` (it may be older than the
reader's look-back), so a client sees a request before its plan, a plan before
its evidence, and so on.
"""

from __future__ import annotations

from tracebound.events import Event


class CausalOrder:
    def __init__(self, hold_s: float) -> None:
        self._hold_s = hold_s
        self._released: set[str] = set()
        self._held: dict[str, list[tuple[float, Event]]] = {}  # cause id → waiting events
        self._waiting: dict[str, Event] = {}  # held events by id

    def offer(self, event: Event, now: float) -> list[Event]:
        """The events ``event`` lets go, in order (empty if it must wait, or is a repeat)."""
        if event.event_id in self._released or event.event_id in self._waiting:
            return []
        cause = event.causation_id
        if cause is None or cause in self._released:
            return self._release(event)
        self._held.setdefault(cause, []).append((now + self._hold_s, event))
        self._waiting[event.event_id] = event
        return []

    def expired(self, now: float) -> list[Event]:
        """Held events whose cause did not show up in time, and what they let go.

        When the cause is itself here but held, the oldest held ancestor goes first,
        so even a timed-out chain keeps its order.
        """
        due = sorted(
            (event for waiting in self._held.values() for until, event in waiting if until <= now),
            key=lambda e: e.occurred_at,
        )
        out: list[Event] = []
        for event in due:
            root, path = event, {event.event_id}
            while root.causation_id in self._waiting and root.causation_id not in path:
                root = self._waiting[root.causation_id]
                path.add(root.event_id)
            if root.event_id in self._released:
                continue
            cause = root.causation_id or ""
            self._held[cause] = [item for item in self._held[cause] if item[1] is not root]
            if not self._held[cause]:
                del self._held[cause]
            out.extend(self._release(root))
        return out

    def next_expiry(self) -> float | None:
        until = [until for waiting in self._held.values() for until, _ in waiting]
        return min(until) if until else None

    def holding(self) -> bool:
        return bool(self._held)

    def _release(self, event: Event) -> list[Event]:
        out: list[Event] = []
        todo = [event]
        while todo:
            current = todo.pop(0)
            self._released.add(current.event_id)
            self._waiting.pop(current.event_id, None)
            out.append(current)
            freed = sorted(
                (e for _, e in self._held.pop(current.event_id, [])),
                key=lambda e: e.occurred_at,
            )
            todo.extend(freed)
        return out
