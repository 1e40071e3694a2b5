"""What the API knows about runs: one background reader over the event topics.

``GET …/answer`` and the SSE stream must not each open a Kafka consumer, so one
thread reads every event topic (``read_committed``, assigned partitions, no
consumer group) from a look-back point before start-up onwards, and keeps the
events of the most recent runs in a bounded buffer. Waiters are asyncio queues:
the thread hands each event to the event loop with ``call_soon_threadsafe``, so
a long wait costs no thread.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaException

from tracebound import kafka as edge
from tracebound.codec import make_codec
from tracebound.events import Answer, Event
from tracebound.settings import KafkaSettings
from tracebound.topology import role

log = logging.getLogger(__name__)
MAX_EVENTS_PER_RUN = 2000
WATCHED = role("ingest").watched_topics


@dataclass
class _Run:
    events: list[Event] = field(default_factory=list)
    ids: set[str] = field(default_factory=set)
    answer: Answer | None = None


Subscriber = tuple[asyncio.AbstractEventLoop, "asyncio.Queue[Event]"]


class RunBuffer:
    """The events of the last ``max_runs`` runs, and who is waiting for more of them."""

    def __init__(self, max_runs: int = 5000) -> None:
        self._max_runs = max_runs
        self._runs: OrderedDict[str, _Run] = OrderedDict()
        self._subscribers: dict[str, list[Subscriber]] = {}
        self._lock = threading.Lock()

    def add(self, event: Event) -> None:
        with self._lock:
            run = self._runs.get(event.run_id)
            if run is None:
                run = self._runs[event.run_id] = _Run()
                while len(self._runs) > self._max_runs:
                    self._runs.popitem(last=False)
            if event.event_id in run.ids:
                return  # a re-read after a rebalance or reconnect
            run.ids.add(event.event_id)
            if len(run.events) < MAX_EVENTS_PER_RUN:
                run.events.append(event)
            if isinstance(event, Answer) and run.answer is None:
                run.answer = event
            waiting = list(self._subscribers.get(event.run_id, ()))
        for loop, queue in waiting:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, event)
            except RuntimeError:
                continue  # that loop is closed; its waiter is gone

    def snapshot(self, run_id: str) -> tuple[list[Event], Answer | None]:
        with self._lock:
            run = self._runs.get(run_id)
            return (list(run.events), run.answer) if run else ([], None)

    def subscribe(self, run_id: str) -> Subscriber:
        """Call from the event loop; events added from now on reach the queue."""
        sub: Subscriber = (asyncio.get_running_loop(), asyncio.Queue())
        with self._lock:
            self._subscribers.setdefault(run_id, []).append(sub)
        return sub

    def unsubscribe(self, run_id: str, sub: Subscriber) -> None:
        with self._lock:
            subs = self._subscribers.get(run_id, [])
            if sub in subs:
                subs.remove(sub)
            if not subs:
                self._subscribers.pop(run_id, None)

    async def wait_answer(self, run_id: str, timeout_s: float) -> tuple[Answer | None, int]:
        """The run's Answer if it arrives within ``timeout_s``, and its event count."""
        sub = self.subscribe(run_id)
        try:
            events, answer = self.snapshot(run_id)
            seen = len(events)
            deadline = time.monotonic() + timeout_s
            while answer is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                try:
                    event = await asyncio.wait_for(sub[1].get(), left)
                except TimeoutError:
                    break
                seen += 1
                if isinstance(event, Answer):
                    answer = event
            return answer, seen
        finally:
            self.unsubscribe(run_id, sub)


class EventReader:
    """The thread that fills a :class:`RunBuffer` from Kafka."""

    def __init__(self, kafka: KafkaSettings, buffer: RunBuffer, lookback_s: int) -> None:
        self._kafka = kafka
        self._buffer = buffer
        self._lookback_s = lookback_s
        self._stop = threading.Event()
        self._follower = edge.PartitionFollower(WATCHED, {})
        self.ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ingest-events", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    def _consumer(self) -> Any:
        consumer = edge.consumer(self._kafka, "ingest")
        since_ms = int((time.time() - self._lookback_s) * 1000)
        starts = edge.offsets_since(consumer, edge.partitions(consumer, WATCHED), since_ms)
        edge.assign(consumer, starts)
        # After a partition-count change, the new partitions are read too.
        self._follower = edge.PartitionFollower(WATCHED, starts)
        return consumer

    def _run(self) -> None:
        codec = make_codec(self._kafka)
        consumer: Any = None
        while not self._stop.is_set():
            if consumer is None:
                try:
                    consumer = self._consumer()
                    self.ready.set()
                except KafkaException as exc:
                    log.warning("event reader cannot start yet: %s", exc)
                    self._stop.wait(2)
                    continue
            for event in edge.decoded(codec, edge.next_batch(consumer, 500, 0.5)):
                self._buffer.add(event)  # poison: the dead-letter path of the roles deals with it
            try:
                self._follower.follow(consumer)
            except KafkaException as exc:  # the broker's trouble: asked again later
                log.debug("partitions not checked: %s", exc)
        if consumer is not None:
            consumer.close()
