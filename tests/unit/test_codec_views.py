"""Each view of the one read path is what the full decode gives, for every catalog event."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.samples import variants
from tracebound.codec import EVENT, SingleObjectCodec, read
from tracebound.codec.views import VIEWS, View
from tracebound.events import EVENT_TYPES

CODEC = SingleObjectCodec()


@pytest.mark.parametrize("view", VIEWS, ids=[v.name for v in VIEWS])
def test_a_view_is_the_full_decode_seen_through_it(view: View[Any]) -> None:
    for name, cls in EVENT_TYPES.items():
        for event in variants(cls):
            value = CODEC.encode(event)
            whole = read(CODEC, EVENT, value)
            assert whole == event, name
            assert read(CODEC, view, value, event.topic) == view.of_event(whole), name
