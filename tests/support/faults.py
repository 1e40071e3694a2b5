"""Helpers for the fault-injection scenarios: the role processes, the requests, the answers.

A :class:`FaultPipeline` runs the five roles and a projection process the way
``tracebound up`` does (``start_services``, pid files in ``<state>/services``), so
a scenario can SIGKILL any of them and start it again. The projection writes
into a schema of its own (``search_path`` through the DSN) with consumer groups
of its own, so the read-model checks see one scenario's projection only.

The scenario's projection starts from checkpoints at the topics' end offsets
when the scenario begins (its *window*), and the rebuild it is compared with
reads the same window from the topics with the code ``projections rebuild``
uses (``ReadModel.write``) into a second fresh schema. Every request of the
scenario is published inside the window, so its runs are complete in both. A
full-history ``projections rebuild`` per scenario would make the suite's time
grow with whatever the topics hold already; ``test_projections`` covers it.
The checks themselves are in :mod:`tests.support.fault_models`, the poison in
:mod:`tests.support.poison`.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from confluent_kafka import KafkaException
from psycopg import sql
from psycopg.rows import dict_row

from projections.migrate import migrate
from projections.models import MODELS
from projections.rebuild import end_offsets, status
from projections.store import Checkpoints, read_checkpoints, write_checkpoints
from tests.support.fault_models import PROJECTION, read_window
from tests.support.kafka_io import CODEC, TopicTail
from tests.support.projection import KEYS
from tests.support.stack import StackHandle
from tracebound import kafka as edge
from tracebound import topics
from tracebound.client import new_request
from tracebound.events import Answer, DiagnosisRequested, Event
from tracebound.settings import KafkaSettings, StackSettings
from tracebound.stack.process import wait_exit
from tracebound.stack.services import start_services, stop_services
from tracebound.topology import PIPELINE_ROLES

QUESTIONS = (
    "payment-service 当前是否有 HighCPUUsage 告警？",
    "inventory-service 是否有 HikariCP 连接池耗尽日志？",
    "Why is order-service using so much memory?",
    "user-service 是否有 SlowResponse 告警？",
)
ROLES = PIPELINE_ROLES
# The read models and their keys; write timestamps differ between a live run and a rebuild.
VOLATILE = ("created_at", "updated_at")


def requests(count: int, seed: int) -> list[DiagnosisRequested]:
    """``count`` chat requests over the demo questions, in a seeded order."""
    rng = random.Random(seed)
    return [new_request(rng.choice(QUESTIONS), language="en") for _ in range(count)]


def publish_in_bursts(
    kafka: KafkaSettings,
    events: Sequence[Event],
    *,
    burst: int,
    pause_s: float,
    stop: threading.Event | None = None,
) -> int:
    """Publish ``events`` ``burst`` at a time with a pause between bursts; return how many."""
    producer = edge.producer(kafka, "test-feeder", config={"message.timeout.ms": "180000"})
    failures: list[str] = []

    def delivered(err: object, _msg: object) -> None:
        if err is not None:
            failures.append(str(err))

    sent = 0
    for start in range(0, len(events), burst):
        if stop is not None and stop.is_set():
            break
        for event in events[start : start + burst]:
            producer.produce(
                event.topic,
                key=event.run_id.encode(),
                value=CODEC.encode(event),
                on_delivery=delivered,
            )
            sent += 1
        producer.poll(0)
        if pause_s:
            time.sleep(pause_s)
    left = producer.flush(180)
    assert left == 0 and not failures, f"requests not acknowledged: {left} left, {failures[:3]}"
    return sent


class Feeder(threading.Thread):
    """Publishes the requests in bursts in the background (the stream the faults hit)."""

    def __init__(
        self, kafka: KafkaSettings, events: Sequence[Event], burst: int, pause_s: float
    ) -> None:
        super().__init__(name="fault-feeder", daemon=True)
        self.kafka, self.events, self.burst, self.pause_s = kafka, events, burst, pause_s
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            publish_in_bursts(self.kafka, self.events, burst=self.burst, pause_s=self.pause_s)
        except BaseException as exc:  # reported by finish()
            self.error = exc

    def finish(self, timeout_s: float) -> None:
        self.join(timeout_s)
        assert not self.is_alive(), f"publishing the requests took over {timeout_s:.0f}s"
        if self.error is not None:
            raise AssertionError(f"publishing the requests failed: {self.error}")


class AnswerCounter(TopicTail):
    """Counts the answers on ``tracebound.answers`` per run id of one scenario."""

    def __init__(self, kafka: KafkaSettings, run_ids: set[str]) -> None:
        self.run_ids = run_ids
        super().__init__(kafka, topics.ANSWERS)

    def counts(self) -> Counter[str]:
        return Counter(
            e.run_id for e in self.snapshot() if isinstance(e, Answer) and e.run_id in self.run_ids
        )

    def answered(self) -> int:
        return len(self.counts())

    def wait_answered(self, count: int, timeout_s: float) -> int:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.answered() >= count:
                break
            time.sleep(0.1)
        return self.answered()

    def wait_all(self, timeout_s: float, what: str) -> None:
        done = self.wait_answered(len(self.run_ids), timeout_s)
        assert done == len(self.run_ids), (
            f"{what}: only {done} of {len(self.run_ids)} requests answered within {timeout_s:.0f}s"
        )


@dataclass
class FaultPipeline:
    """The roles and a private-schema projection as detached processes of one scenario."""

    stack: StackHandle
    state_dir: Path
    env: Mapping[str, str] = field(default_factory=dict)
    schema: str = field(default_factory=lambda: f"faults_{uuid.uuid4().hex[:10]}")

    def __post_init__(self) -> None:
        self.settings = StackSettings(state_dir=self.state_dir)
        self.dsn = self._schema_dsn(self.schema)
        self.window_start: dict[str, Checkpoints] = {}
        with psycopg.connect(self.stack.pg_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(self.schema)))
        with self.conn() as conn:
            migrate(conn)
            for model in MODELS.values():
                start = end_offsets(self.stack.kafka, model.topics)
                self.window_start[model.name] = start
                with conn.transaction():
                    write_checkpoints(conn, model.name, start)

    def _schema_dsn(self, schema: str) -> str:
        sep = "&" if "?" in self.stack.pg_dsn else "?"
        return f"{self.stack.pg_dsn}{sep}options=-csearch_path%3D{schema}"

    def role_env(self) -> dict[str, str]:
        env = {k: v for k, v in self.stack.env().items() if k.startswith("TRACEBOUND_")}
        env.update(self.env)
        return env

    def projection_env(self) -> dict[str, str]:
        env = self.role_env()
        env["TRACEBOUND_PG_DSN"] = self.dsn
        env["TRACEBOUND_PROJECTIONS_GROUP_PREFIX"] = f"test-{self.schema}."
        return env

    def start(
        self, roles: Sequence[str] = (*ROLES, PROJECTION), replicas: int | None = None
    ) -> None:
        """Start every role (and the projection) of ``roles`` that is not running, with
        ``replicas`` processes of each role (the projection stays one)."""
        pipeline = tuple(r for r in roles if r != PROJECTION)
        if pipeline:
            wanted = dict.fromkeys(pipeline, replicas) if replicas is not None else None
            start_services(self.settings, self.role_env(), pipeline, wanted)
        if PROJECTION in roles:
            start_services(self.settings, self.projection_env(), (PROJECTION,))

    def pid(self, role: str) -> int:
        """The pid of ``role``'s process, or of a replica of it named ``<role>-<i>``."""
        path = self.state_dir / "services" / f"{role}.pid"
        return int(path.read_text().split()[0])

    def alive(self, role: str) -> bool:
        try:
            os.kill(self.pid(role), 0)
        except (ProcessLookupError, FileNotFoundError):
            return False
        with contextlib.suppress(ChildProcessError):
            reaped, _ = os.waitpid(self.pid(role), os.WNOHANG)
            return reaped == 0
        return True

    def kill(self, role: str) -> None:
        """SIGKILL ``role``'s process and wait until it is gone (reaped if ours)."""
        pid = self.pid(role)
        os.kill(pid, signal.SIGKILL)
        assert wait_exit(pid, 10), f"{role} (pid {pid}) outlived SIGKILL"

    def stop(self, roles: Sequence[str] = (*ROLES, PROJECTION)) -> None:
        """SIGTERM the processes of ``roles`` all at once (each may take its stop timeout)."""
        threads = [
            threading.Thread(target=stop_services, args=(self.settings, (role,)), daemon=True)
            for role in roles
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)

    def log_tail(self, role: str, lines: int = 30) -> str:
        path = self.state_dir / "services" / f"{role}.log"
        if not path.exists():
            return ""
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])

    @contextlib.contextmanager
    def conn(self) -> Iterator[psycopg.Connection[Any]]:
        with psycopg.connect(self.dsn, autocommit=True, connect_timeout=10) as conn:
            yield conn

    def wait_projected(self, timeout_s: float) -> None:
        """Until the projection's checkpoints reach the end of every topic it reads."""
        deadline = time.monotonic() + timeout_s
        lag: int | str = "unknown"
        while time.monotonic() < deadline:
            try:
                with self.conn() as conn:
                    lag = sum(m["lag"] for m in status(conn, self.stack.kafka))
            except (psycopg.Error, KafkaException) as exc:
                lag = f"unknown ({exc})"
            if lag == 0:
                return
            time.sleep(0.5)
        raise AssertionError(
            f"projection in {self.schema} still {lag} events behind after {timeout_s:.0f}s;"
            f" log:\n{self.log_tail(PROJECTION)}"
        )

    def snapshot(self, dsn: str | None = None) -> dict[str, list[dict[str, Any]]]:
        """Every row of every read model ordered by key, without write timestamps."""
        tables: dict[str, list[dict[str, Any]]] = {}
        with (
            psycopg.connect(dsn or self.dsn, autocommit=True, connect_timeout=10) as conn,
            conn.cursor(row_factory=dict_row) as cur,
        ):
            for table, key in KEYS.items():
                cur.execute(
                    sql.SQL("SELECT * FROM {} ORDER BY {}").format(
                        sql.Identifier(table), sql.Identifier(key)
                    )
                )
                tables[table] = [
                    {k: v for k, v in row.items() if k not in VOLATILE} for row in cur.fetchall()
                ]
        return tables

    def rebuild_window(self, timeout_s: float = 180) -> dict[str, list[dict[str, Any]]]:
        """Rebuild every model from the scenario's window into a fresh schema; its rows.

        The window ends where the (stopped) live projection's checkpoints are.
        """
        schema = f"{self.schema}_rebuilt"
        with psycopg.connect(self.stack.pg_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        dsn = self._schema_dsn(schema)
        deadline = time.monotonic() + timeout_s
        with self.conn() as live, psycopg.connect(dsn, autocommit=True) as conn:
            migrate(conn)
            for model in MODELS.values():
                ends = read_checkpoints(live, model.name)
                start = self.window_start[model.name]
                for batch in read_window(self.stack.kafka, start, ends, deadline):
                    with conn.transaction():
                        model.write(conn, model.name, batch)
                with conn.transaction():
                    write_checkpoints(conn, model.name, ends)
        return self.snapshot(dsn)

    def drop_schema(self) -> None:
        with psycopg.connect(self.stack.pg_dsn, autocommit=True, connect_timeout=10) as conn:
            for schema in (self.schema, f"{self.schema}_rebuilt"):
                conn.execute(
                    sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
                )


def assert_one_answer_each(counter: AnswerCounter, what: str) -> tuple[int, int, int]:
    """Exactly one answer per request: (answered, duplicates, lost)."""
    counts = counter.counts()
    duplicates = sum(n - 1 for n in counts.values() if n > 1)
    lost = len(counter.run_ids - set(counts))
    assert not lost, f"{what}: {lost} requests never answered"
    assert not duplicates, f"{what}: {duplicates} duplicate answers"
    return len(counts), duplicates, lost
