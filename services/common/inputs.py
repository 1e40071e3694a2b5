"""A role's inputs as its service needs them: topics to consume and event types to accept.

Both come from the topology (:mod:`tracebound.topology`), so a role's wiring cannot
disagree with the stack's lag report or the README's diagram.
"""

from __future__ import annotations

from tracebound.events import EVENT_TYPES, Event
from tracebound.topology import role


def role_inputs(name: str) -> tuple[tuple[str, ...], tuple[type[Event], ...]]:
    """``(input topics, accepted event types)`` of the role called ``name``."""
    spec = role(name)
    return spec.input_topics, tuple(EVENT_TYPES[event] for event in spec.accepts)
