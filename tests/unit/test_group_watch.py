"""Membership repairs: one rejoin after a rebuild, a rebuild when a loss is never followed."""

from __future__ import annotations

from tracebound.runtime.membership import GroupWatch, Repair


def test_nothing_is_due_for_a_member_that_was_never_rebuilt() -> None:
    watch = GroupWatch(lost_rebuild_s=30.0)
    watch.assigned()
    assert watch.due(0.0) is None
    watch.assigned()
    assert watch.due(1000.0) is None


def test_rebuilt_clients_rejoin_once_after_their_first_assignment() -> None:
    watch = GroupWatch()
    watch.rebuilt()
    assert watch.due(0.0) is None  # not before the new consumer has joined
    watch.assigned()
    assert watch.due(1.0) is Repair.REJOIN
    assert watch.due(2.0) is None  # reported once
    watch.assigned()  # the rejoin's own assignment
    assert watch.due(3.0) is None


def test_a_loss_never_followed_by_an_assignment_rebuilds_the_clients() -> None:
    watch = GroupWatch(lost_rebuild_s=30.0)
    watch.lost(100.0)
    watch.lost(110.0)  # a second loss does not restart the wait
    assert watch.due(129.0) is None
    assert watch.due(130.0) is Repair.REBUILD
    assert watch.due(200.0) is None


def test_an_assignment_after_a_loss_even_an_empty_one_ends_the_wait() -> None:
    watch = GroupWatch(lost_rebuild_s=30.0)
    watch.lost(100.0)
    watch.assigned()
    assert watch.due(500.0) is None


def test_a_rebuild_forgets_the_loss_that_caused_it() -> None:
    watch = GroupWatch(lost_rebuild_s=30.0)
    watch.lost(100.0)
    assert watch.due(130.0) is Repair.REBUILD
    watch.rebuilt()
    watch.lost(131.0)
    watch.rebuilt()
    assert watch.due(1000.0) is None
