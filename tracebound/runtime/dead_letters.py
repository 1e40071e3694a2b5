"""The dead letter of an input a role cannot process (pure: message in, event out)."""

from __future__ import annotations

from typing import Any

from tracebound.events import DeadLetter
from tracebound.events import Producer as ProducerRef

MAX_ERROR_CHARS = 4000


def run_id_of(message: Any) -> str:
    """The run id the message is keyed by, or ``unknown`` for a missing or non-UTF-8 key."""
    key = message.key()
    try:
        return key.decode("utf-8") if key else "unknown"
    except UnicodeDecodeError:
        return "unknown"


def dead_letter(message: Any, exc: Exception, *, service: str, producer: ProducerRef) -> DeadLetter:
    """Where the input was, its exact bytes, and why it was refused."""
    return DeadLetter(
        run_id=run_id_of(message),
        producer=producer,
        source_topic=message.topic() or "",
        source_partition=message.partition() or 0,
        source_offset=message.offset() or 0,
        key=message.key(),
        value=message.value(),
        error_type=type(exc).__name__,
        error_message=str(exc)[:MAX_ERROR_CHARS],
        service=service,
    )
