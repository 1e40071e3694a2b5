"""One read path for events, with named views of what is read.

Every reader of event bytes reads them through its codec as one of three views:

- :data:`EVENT`: the whole event, its model validated (the roles, the client);
- :data:`DOCUMENT`: the same event as a JSON document, no model built
  (:mod:`tracebound.codec.documents`; the projections);
- :data:`HEAD`: the envelope alone, the body unread (:mod:`tracebound.codec.heads`;
  the sentinel).

Each view is what the full decode gives, seen through :attr:`View.of_event`; one
test holds each view to that against the full decode of every catalog event.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from tracebound.codec.documents import EventDoc, document
from tracebound.codec.heads import EventHead
from tracebound.events import Event

T = TypeVar("T")


class EventReader(Protocol):
    """What the views read with: every codec (:func:`tracebound.codec.make_codec`)."""

    def decode(self, data: bytes | None, topic: str | None = None) -> Event: ...

    def decode_doc(self, data: bytes | None, topic: str | None = None) -> EventDoc: ...

    def decode_head(self, data: bytes | None, topic: str | None = None) -> EventHead: ...


def head_of(event: Event) -> EventHead:
    """The envelope of a whole event, as :data:`HEAD` reads it from its bytes."""
    return EventHead(
        event.schema_name, event.run_id, event.occurred_at, event.session_id, event.producer.service
    )


@dataclass(frozen=True)
class View(Generic[T]):
    """A named way to read an event's bytes, and what it is of the whole event."""

    name: str
    read: Callable[[EventReader, bytes | None, str | None], T]
    of_event: Callable[[Event], T]


EVENT: View[Event] = View(
    "event", lambda codec, data, topic: codec.decode(data, topic), lambda e: e
)
DOCUMENT: View[EventDoc] = View(
    "document", lambda codec, data, topic: codec.decode_doc(data, topic), document
)
HEAD: View[EventHead] = View(
    "head", lambda codec, data, topic: codec.decode_head(data, topic), head_of
)


def read(codec: EventReader, view: View[T], data: bytes | None, topic: str | None = None) -> T:
    """``data`` read by ``codec`` as ``view``."""
    return view.read(codec, data, topic)


VIEWS: tuple[View[Event] | View[EventDoc] | View[EventHead], ...] = (EVENT, DOCUMENT, HEAD)

__all__ = ["DOCUMENT", "EVENT", "HEAD", "VIEWS", "EventReader", "View", "head_of", "read"]
