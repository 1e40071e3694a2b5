"""Read-model checks of the fault scenarios: nothing lost or doubled, live equals a rebuild."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

from projections.store import Checkpoints
from tests.support.kafka_io import CODEC
from tests.support.projection import KEYS
from tracebound import kafka as edge
from tracebound.errors import TransientError
from tracebound.events import Event
from tracebound.settings import KafkaSettings

if TYPE_CHECKING:
    from tests.support.faults import FaultPipeline

PROJECTION = "projections"  # the role name of the projection process


def read_window(
    kafka: KafkaSettings, start: Checkpoints, ends: Checkpoints, deadline: float
) -> Iterator[list[Event]]:
    """The committed events between ``start`` and ``ends`` per partition, in batches."""
    consumer = edge.consumer(kafka, "test-faults-window", config=edge.READ_TO_END)
    try:
        left = max(deadline - time.monotonic(), 0.0)
        for messages in edge.read_range(consumer, start, ends, timeout_s=left, batch=1000):
            yield list(edge.decoded(CODEC, messages))  # poison: the roles dead-lettered it
    except TransientError as exc:
        raise AssertionError(f"window not read in time: {exc}") from exc
    finally:
        consumer.close()


def check_read_models(
    pipeline: FaultPipeline, run_ids: set[str], timeout_s: float
) -> dict[str, float]:
    """No lost or duplicated rows for our runs, and live rows equal a rebuild; phase times."""
    phases: dict[str, float] = {}
    began = time.monotonic()
    pipeline.wait_projected(timeout_s)
    phases["caught up"] = time.monotonic() - began
    with pipeline.conn() as conn:
        rows = conn.execute(
            "SELECT run_id, count(*), min(status) FROM diagnosis_run"
            " WHERE run_id = ANY(%s) GROUP BY run_id",
            (list(run_ids),),
        ).fetchall()
        dup_inv = conn.execute(
            "SELECT count(*) - count(DISTINCT id) FROM tool_invocation WHERE run_id = ANY(%s)",
            (list(run_ids),),
        ).fetchone()
        invocations = conn.execute(
            "SELECT count(*) FROM tool_invocation WHERE run_id = ANY(%s)", (list(run_ids),)
        ).fetchone()
    projected = {r[0] for r in rows}
    assert projected == run_ids, (
        f"diagnosis_run: {len(run_ids - projected)} requests have no row,"
        f" {len(projected - run_ids)} rows are not ours"
    )
    assert all(r[1] == 1 for r in rows), "a run has more than one diagnosis_run row"
    not_done = [r for r in rows if r[2] != "answered"]
    assert not not_done, f"{len(not_done)} answered runs are not answered in diagnosis_run"
    assert dup_inv is not None and dup_inv[0] == 0, "duplicate tool_invocation ids"
    assert invocations is not None and invocations[0] > 0, "no tool invocations projected"
    began = time.monotonic()
    pipeline.stop((PROJECTION,))  # the window ends at the stopped projection's checkpoints
    phases["stopped"] = time.monotonic() - began
    live = pipeline.snapshot()
    began = time.monotonic()
    rebuilt = pipeline.rebuild_window()
    phases["rebuilt"] = time.monotonic() - began
    for table in KEYS:
        assert len(live[table]) == len(rebuilt[table]), (
            f"{table}: {len(live[table])} live rows, {len(rebuilt[table])} after a rebuild"
        )
        differ = [a for a, b in zip(live[table], rebuilt[table], strict=True) if a != b]
        assert not differ, f"{table}: {len(differ)} rows differ from a rebuild, e.g. {differ[0]}"
    return phases
