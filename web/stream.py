"""``GET /api/v1/runs/{run_id}/events``: a run's events as server-sent events.

Events go out in causal order (see :mod:`web.causal`), the ones already seen
first; the Answer goes last, once nothing else of the run is held or
``SETTLE_S`` has passed since it arrived. Waiting costs no thread: the run
buffer hands new events to an asyncio queue.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator

from services.ingest.runs import RunBuffer
from tracebound.events import Answer, Event
from web.causal import CausalOrder

KEEPALIVE_S = 15.0
# How long the event stream holds an event whose cause it has not seen yet, and
# holds the Answer back while other events of the run are still held.
CAUSE_WAIT_S = 10.0
SETTLE_S = 1.5
HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def sse(event: Event) -> str:
    """One event in the ``text/event-stream`` framing."""
    data = json.dumps(event.to_json(), ensure_ascii=False, default=str)
    return f"id: {event.event_id}\nevent: {event.schema_name}\ndata: {data}\n\n"


async def run_events(runs: RunBuffer, run_id: str, wait: float) -> AsyncIterator[str]:
    """The SSE frames of ``run_id`` until its Answer, or a timeout frame after ``wait`` s."""
    sub = runs.subscribe(run_id)
    try:
        order = CausalOrder(CAUSE_WAIT_S)
        deadline = time.monotonic() + wait
        past, _ = await asyncio.to_thread(runs.snapshot, run_id)  # may decode: off the loop
        ready = [
            out
            for event in sorted(past, key=lambda e: e.occurred_at)
            for out in order.offer(event, time.monotonic())
        ]
        answer: Answer | None = None
        settle = deadline
        while True:
            for event in ready:
                if isinstance(event, Answer):
                    answer = answer or event
                    settle = min(deadline, time.monotonic() + SETTLE_S)
                else:
                    yield sse(event)
            now = time.monotonic()
            if answer is not None and (not order.holding() or now >= settle):
                yield sse(answer)
                return
            if now >= deadline:
                yield "event: timeout\ndata: {}\n\n"
                return
            expiry = order.next_expiry()
            left = min(deadline, settle, expiry or deadline) - now
            try:
                event = await asyncio.wait_for(sub[1].get(), max(0.0, min(left, KEEPALIVE_S)))
            except TimeoutError:
                ready = order.expired(time.monotonic())
                if not ready and answer is None and left > KEEPALIVE_S:
                    yield ": keep-alive\n\n"
                continue
            ready = order.offer(event, time.monotonic())
    finally:
        runs.unsubscribe(run_id, sub)
