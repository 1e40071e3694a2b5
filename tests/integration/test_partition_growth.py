"""A partition-count change while runs are in flight: every run answered, none twice.

The documented way: every run-keyed topic grows at once (one request). Two
composer replicas and the sentinel (with a short deadline) run meanwhile: the
sentinel must follow the new partitions through its group, or it would see the
runs that moved there stall and give up on them; the composer must know answers
committed on any partition, or a deadline verdict on the new partition would
get a second answer.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewPartitions

from tests.support.kafka_io import Collector
from tests.support.pipeline import ROLES, running_pipeline
from tests.support.stack import StackHandle
from tracebound import kafka as edge
from tracebound import topics
from tracebound.client import new_request, publish
from tracebound.events import Answer, Event
from tracebound.stack.topics import quiet_admin_config

RUNS = 24
DEADLINE_S = 30  # a run stalled this long is given up: well past a stage's time here
ENV = {
    "TRACEBOUND_SENTINEL_DEADLINE_S": str(DEADLINE_S),
    "TRACEBOUND_SENTINEL_TICK_S": "0.5",
    "TRACEBOUND_SENTINEL_LOOKBACK_S": "300",
}


def _grow_every_run_keyed_topic(stack: StackHandle, by: int) -> int:
    """Add ``by`` partitions to every run-keyed topic in one request; the new count."""
    bootstrap = stack.kafka.client_config()["bootstrap.servers"]
    admin = AdminClient(quiet_admin_config(bootstrap, stack.kafka.client_config()))
    counts = edge.partition_counts(admin, topics.copartitioned(), 10.0)
    [count] = set(counts.values())
    grown = [NewPartitions(name, count + by) for name in counts]
    for future in admin.create_partitions(grown, request_timeout=30).values():
        future.result()
    return count + by


def _answered(run_ids: set[str]) -> Callable[[list[Event]], bool]:
    return lambda events: run_ids <= {e.run_id for e in events if isinstance(e, Answer)}


def test_runs_in_flight_survive_every_topic_growing_together(
    stack: StackHandle, tmp_path: Path
) -> None:
    answers = Collector(stack.kafka, topics.ANSWERS, from_end=True)
    try:
        with (
            running_pipeline(stack, tmp_path / "a", ENV, roles=(*ROLES, "sentinel")),
            running_pipeline(
                stack, tmp_path / "b", {"TRACEBOUND_COMPOSER_REPLICA_ID": "b"}, roles=("composer",)
            ),
        ):
            warm = new_request("payment-service HighCPUUsage?")
            publish(stack.kafka, [warm])
            assert answers.wait_until(_answered({warm.run_id}), 180), "pipeline not up"
            # Requested now (the sentinel's deadline counts from the request's time).
            asked = [new_request(f"payment-service HighCPUUsage {n}?") for n in range(RUNS)]
            publish(stack.kafka, asked[: RUNS // 2])
            later = threading.Thread(target=publish, args=(stack.kafka, asked[RUNS // 2 :]))
            later.start()
            count = _grow_every_run_keyed_topic(stack, by=2)
            later.join()
            all_runs = {r.run_id for r in asked}
            assert answers.wait_until(_answered(all_runs), 240), "some runs never answered"
            time.sleep(DEADLINE_S + 6)  # a stray deadline verdict would be answered by now
            for role in (*ROLES, "sentinel"):
                log = (tmp_path / "a" / "services" / f"{role}.log").read_text()
                assert "must all have one partition count" not in log, f"{role} stopped"
    finally:
        answers.close()
    ours = [a for a in answers.snapshot() if isinstance(a, Answer) and a.run_id in all_runs]
    per_run = Counter(a.run_id for a in ours)
    assert set(per_run.values()) == {1}, f"answered twice: {per_run.most_common(3)}"
    assert {a.final_status for a in ours} <= {"answered", "degraded"}, "none given up"
    consumer = edge.consumer(stack.kafka, "test-partitions")
    try:
        assert set(edge.partition_counts(consumer, topics.copartitioned(), 10).values()) == {count}
    finally:
        consumer.close()
