"""Co-partitioning: every run-keyed topic has one partition count, or the roles refuse."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from tracebound import kafka as edge
from tracebound import topics


def test_one_count_for_all_is_fine_and_missing_topics_are_not_counted() -> None:
    edge.check_copartitioned({})
    edge.check_copartitioned({t: 6 for t in topics.copartitioned()})


def test_an_odd_topic_is_named_with_the_usual_count_and_the_way_out() -> None:
    counts = {t: 12 for t in topics.copartitioned()} | {topics.VERDICTS: 18}
    with pytest.raises(edge.NotCopartitioned) as caught:
        edge.check_copartitioned(counts)
    text = str(caught.value)
    assert f"{len(counts) - 1} have 12, but tracebound.verdicts has 18" in text
    assert "let the pipeline drain" in text


def test_two_odd_topics_with_one_count_are_said_together() -> None:
    counts = {"a": 3, "b": 3, "c": 3, "d": 6, "e": 6}
    with pytest.raises(edge.NotCopartitioned, match="3 have 3, but d, e have 6"):
        edge.check_copartitioned(counts)


def test_the_run_keyed_topics_are_the_event_topics_but_dead_letters() -> None:
    names = topics.copartitioned()
    assert topics.DEAD_LETTERS not in names
    assert {topics.REQUESTS, topics.VERDICTS, topics.ANSWERS} <= set(names)


@dataclass
class _Topic:
    partitions: dict[int, Any]
    error: Any = None


@dataclass
class _Metadata:
    topics: dict[str, _Topic] = field(default_factory=dict)


class _Client:
    def __init__(self, metadata: _Metadata) -> None:
        self.metadata = metadata

    def list_topics(self, timeout: float) -> _Metadata:
        return self.metadata


def test_counts_come_from_one_metadata_request_and_skip_broken_topics() -> None:
    metadata = _Metadata(
        {
            "a": _Topic({0: None, 1: None}),
            "b": _Topic({0: None}, error="UNKNOWN_TOPIC_OR_PART"),
            "x": _Topic({0: None}),
        }
    )
    assert edge.partition_counts(_Client(metadata), ["a", "b", "c"], 1.0) == {"a": 2}
