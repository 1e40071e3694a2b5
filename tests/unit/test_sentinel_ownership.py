"""The sentinel's group member rejoins once after being built again, like the roles."""

from __future__ import annotations

import threading
from functools import partial
from typing import Any

import pytest

from services.sentinel import ownership as ownership_module
from services.sentinel.ownership import Ownership
from tracebound.runtime.bounded import close_within
from tracebound.settings import KafkaSettings


class Member:
    """Records what the ownership asks of its group member."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def unsubscribe(self) -> None:
        self.calls.append("unsubscribe")

    def subscribe(self, topics: list[str], **_callbacks: Any) -> None:
        self.calls.append("subscribe")

    def incremental_assign(self, _partitions: list[Any]) -> None:
        pass

    def pause(self, _partitions: list[Any]) -> None:
        pass


def _ownership(*, rebuilt: bool) -> tuple[Ownership, Member, Any]:
    ownership = Ownership(KafkaSettings(), "sentinel-unit", 60.0, rebuilt=rebuilt)
    real, member = ownership.member, Member()
    ownership.member = member
    return ownership, member, real


def test_a_member_built_again_rejoins_once_after_its_first_assignment() -> None:
    ownership, member, real = _ownership(rebuilt=True)
    try:
        assert ownership.repair() is False and member.calls == []  # not joined yet
        ownership._assigned(member, [])  # an empty assignment counts as one
        assert ownership.repair() is False
        assert member.calls == ["unsubscribe", "subscribe"]
        ownership._assigned(member, [])  # the rejoin's own assignment
        assert ownership.repair() is False and len(member.calls) == 2
    finally:
        real.close()
        ownership.reader.close()


def test_a_first_member_keeps_its_stored_assignment() -> None:
    ownership, member, real = _ownership(rebuilt=False)
    try:
        ownership._assigned(member, [])
        assert ownership.repair() is False and member.calls == []
    finally:
        real.close()
        ownership.reader.close()


class Wedged:
    """A client whose close never returns (its broker gone mid-request)."""

    def __init__(self) -> None:
        self.released = threading.Event()
        self.closing = 0

    def close(self) -> None:
        self.closing += 1
        self.released.wait()


def test_a_member_being_replaced_is_abandoned_without_waiting_on_a_wedged_close(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the same bound, shorter than the roles' 2 s per client, so the test need not wait
    monkeypatch.setattr(ownership_module, "close_within", partial(close_within, seconds=0.05))
    ownership, _member, real = _ownership(rebuilt=False)
    reader = ownership.reader
    wedged = Wedged()
    ownership.member, ownership.reader = wedged, wedged
    try:
        ownership.abandon()  # without the bound this never returns (the test times out)
        assert wedged.closing == 2 and not wedged.released.is_set()
    finally:
        wedged.released.set()
        # The real clients' revocation callbacks use the ownership's own members.
        ownership.member, ownership.reader = real, reader
        real.close()
        reader.close()
