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
from tracebound.codec import Codec, SingleObjectCodec
from tracebound.errors import PoisonInput
from tracebound.events import Answer, Event
from tracebound.settings import KafkaSettings
from tracebound.topics import topic_for
from tracebound.topology import role

log = logging.getLogger(__name__)
MAX_EVENTS_PER_RUN = 2000
WATCHED = role("ingest").watched_topics
ANSWERS = topic_for("Answer")
EVENT_SIZE = 1024  # what an event published here counts for in the byte bound


@dataclass
class _Run:
    # Events as read (topic and Avro bytes) until someone asks for the run; then decoded.
    entries: list[Event | tuple[str, bytes]] = field(default_factory=list)
    ids: set[str] = field(default_factory=set)  # event ids of the decoded entries
    size: int = 0
    answer: Answer | None = None


Subscriber = tuple[asyncio.AbstractEventLoop, "asyncio.Queue[Event]"]


class RunBuffer:
    """The events of the last ``max_runs`` runs (at most ``max_bytes`` of them), and who is
    waiting for more.

    Events are kept as the bytes read and decoded only for a run someone asks about
    (a snapshot, or a waiter when they arrive): most runs are never asked for, and
    a decoded event takes about ten times its bytes. Answers are decoded as they come.
    The oldest runs leave first, whichever bound they pass.
    """

    def __init__(
        self, max_runs: int = 5000, max_bytes: int = 64 << 20, codec: Codec | None = None
    ) -> None:
        self._max_runs, self._max_bytes = max_runs, max_bytes
        self._codec = codec or SingleObjectCodec()
        self._runs: OrderedDict[str, _Run] = OrderedDict()
        self._bytes = 0
        self._subscribers: dict[str, list[Subscriber]] = {}
        self._lock = threading.Lock()

    @property
    def size(self) -> int:
        """Bytes held (events decoded here count for the bytes they were read from)."""
        return self._bytes

    def add(self, event: Event) -> None:
        """An event this process published (decoded already)."""
        with self._lock:
            if not self._hold(self._run(event.run_id), event, EVENT_SIZE):
                return
            waiting = list(self._subscribers.get(event.run_id, ()))
        _deliver(waiting, event)

    def add_message(self, run_id: str, message: Any) -> None:
        """A message read from ``run_id``'s topics (one read twice counts once when decoded)."""
        topic, data = message.topic(), message.value()
        with self._lock:
            run = self._run(run_id)
            waiting = list(self._subscribers.get(run_id, ()))
            if not waiting and topic != ANSWERS:
                self._hold(run, (topic, data), len(data))
                return
        event = self.decode(topic, data)
        if event is None or event.run_id != run_id:
            return
        with self._lock:
            if not self._hold(self._run(run_id), event, len(data)):
                return
        _deliver(waiting, event)

    def snapshot(self, run_id: str) -> tuple[list[Event], Answer | None]:
        """The run's events so far (each event once) and its answer.

        It may decode (and, with a schema registry, fetch a schema): an event loop
        calls it in a thread."""
        with self._lock:
            run = self._runs.get(run_id)
            if run is None:
                return [], None
            entries = list(run.entries)
        events: list[Event] = []
        seen: set[str] = set()
        dropped = 0  # bytes of what is not kept: a message read twice, poison, another run's
        for entry in entries:
            event = entry if isinstance(entry, Event) else self.decode(*entry)
            if event is None or event.run_id != run_id or event.event_id in seen:
                dropped += 0 if isinstance(entry, Event) else len(entry[1])
                continue
            seen.add(event.event_id)
            events.append(event)
        with self._lock:
            held = self._runs.get(run_id)
            if held is None:
                return events, run.answer
            if all(a is b for a, b in zip(held.entries, entries, strict=False)):
                held.entries[: len(entries)] = events  # decoded once, duplicates dropped
                held.ids.update(seen)
                held.size -= dropped
                self._bytes -= dropped
            return events, held.answer

    def _run(self, run_id: str) -> _Run:
        """The run's buffer (created as the newest run); call with the lock held."""
        run = self._runs.get(run_id)
        if run is None:
            run = self._runs[run_id] = _Run()
        return run

    def _hold(self, run: _Run, entry: Event | tuple[str, bytes], size: int) -> bool:
        """Keep ``entry`` in ``run`` unless it is a decoded event held already (False),
        then let the oldest runs go past the bounds."""
        if isinstance(entry, Event):
            if entry.event_id in run.ids:
                return False
            run.ids.add(entry.event_id)
        if isinstance(entry, Answer) and run.answer is None:
            run.answer = entry
        if len(run.entries) < MAX_EVENTS_PER_RUN:
            run.entries.append(entry)
            run.size += size
            self._bytes += size
        while len(self._runs) > 1 and (
            len(self._runs) > self._max_runs or self._bytes > self._max_bytes
        ):
            _, gone = self._runs.popitem(last=False)
            self._bytes -= gone.size
        return True

    def decode(self, topic: str, data: bytes) -> Event | None:
        """The event of a message, in the buffer's codec; None for poison."""
        try:
            return self._codec.decode(data, topic)
        except PoisonInput:
            return None  # the roles dead-letter it; a reader passes it over

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
            events, answer = await asyncio.to_thread(self.snapshot, run_id)  # may decode
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


def _deliver(waiting: list[Subscriber], event: Event) -> None:
    for loop, queue in waiting:
        try:
            loop.call_soon_threadsafe(queue.put_nowait, event)
        except RuntimeError:
            continue  # that loop is closed; its waiter is gone


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

    def _take(self, message: Any) -> None:
        """Hand a message to the buffer under its key, the run id the roles key events by
        (a message without a key is decoded for it; poison is the roles' business)."""
        if message.error() is not None or message.value() is None:
            return
        key = message.key()
        if key is None:
            event = self._buffer.decode(message.topic(), message.value())
            if event is None:
                return
            key = event.run_id.encode()
        self._buffer.add_message(key.decode("utf-8", "replace"), message)

    def _run(self) -> None:
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
            for message in edge.next_batch(consumer, 500, 0.5):
                self._take(message)
            try:
                self._follower.follow(consumer)
            except KafkaException as exc:  # the broker's trouble: asked again later
                log.debug("partitions not checked: %s", exc)
        if consumer is not None:
            consumer.close()
