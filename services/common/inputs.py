"""A role's wiring as its service needs it: topics to consume, event types to accept,
topics it writes to.

All come from the topology (:mod:`tracebound.topology`), so a role's wiring cannot
disagree with the stack's lag report or the README's diagram.
"""

from __future__ import annotations

from tracebound.events import EVENT_TYPES, Event
from tracebound.topology import role


def role_inputs(name: str) -> tuple[tuple[str, ...], tuple[type[Event], ...]]:
    """``(input topics, accepted event types)`` of the role called ``name``."""
    spec = role(name)
    return spec.input_topics, tuple(EVENT_TYPES[event] for event in spec.accepts)


def role_outputs(name: str) -> tuple[str, ...]:
    """Every topic the role called ``name`` writes to."""
    return role(name).output_topics
