"""The consume-transform-produce loop, exactly once with Kafka transactions.

One transaction per commit: the outputs of every message handled since the
last commit and their input offsets (``send_offsets_to_transaction``) commit
together, so a crash at any point either publishes them all and their
progress, or nothing. The outputs wait in memory until then; a commit is due
by size, by time or when input runs dry (:mod:`~tracebound.runtime.commit_policy`).
Inputs are read ``read_committed``; the ``transactional.id`` is stable per
replica so a restarted process fences its zombie predecessor.

A role that waits on a model runs the handler calls of a batch concurrently
(:mod:`~tracebound.runtime.inflight`), in batches and with a poll interval sized
by its model time budget (:mod:`~tracebound.runtime.pacing`); the outputs still
keep the order of the inputs and commit in the batch's one transaction.

Failure policy:
- undecodable or invalid input → a ``DeadLetter`` in the same transaction; the
  partition keeps moving;
- ``TransientError`` from the handler → rewind everything not yet committed, back
  off and read it again, never dead-lettered;
- abortable Kafka error → abort, rewind the consumer to the first uncommitted input;
- partitions assigned, revoked or lost → rewind to the first uncommitted input (another
  member may own some of them next);
- retriable Kafka error while committing → retry the commit;
- fatal Kafka error (e.g. fenced) → rebuild the clients and resume from the
  committed offsets;
- a transaction's calls still running past their bound (a dead coordinator) →
  abandon the clients and rebuild them at once (:mod:`~tracebound.runtime.bounded`);
- after any rebuild, one rejoin of the group; no assignment long after a loss →
  rebuild (:mod:`~tracebound.runtime.membership`);
- offsets held by a transaction its coordinator forgot → sweep it (:mod:`.hanging`).
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Sequence
from typing import Any

from confluent_kafka import KafkaException, Message, TopicPartition

from tracebound import kafka as edge
from tracebound.codec import Codec, make_codec
from tracebound.collector import tuned_collector
from tracebound.errors import TransientError
from tracebound.kafka import Severity, severity_of
from tracebound.replica import ReplicaLock
from tracebound.runtime import clients
from tracebound.runtime.batch import (
    CrashedOnce,
    Limits,
    Output,
    first_offsets,
    next_offsets,
    transform,
)
from tracebound.runtime.bounded import (
    BoundedCalls,
    ClientStuckError,
    Deadline,
    close_within,
    commit_within,
)
from tracebound.runtime.commit_policy import CommitPolicy, Uncommitted
from tracebound.runtime.hanging import Sweeper
from tracebound.runtime.inflight import InFlight
from tracebound.runtime.membership import GroupWatch, Repair, rejoin
from tracebound.runtime.metrics import ServiceMetrics
from tracebound.runtime.pacing import pace
from tracebound.runtime.service import ServiceSpec
from tracebound.runtime.stages import CLOCK
from tracebound.settings import KafkaSettings, RuntimeSettings

log = logging.getLogger("tracebound.runtime")

LAG_INTERVAL_S = 10.0
MAX_SUSPECTS = 10_000


class ServiceLoop:
    """Runs one :class:`ServiceSpec` until :meth:`stop` (or SIGTERM) is called."""

    def __init__(
        self,
        spec: ServiceSpec,
        kafka: KafkaSettings | None = None,
        runtime: RuntimeSettings | None = None,
        codec: Codec | None = None,
        metrics: ServiceMetrics | None = None,
    ) -> None:
        self.spec = spec
        self.kafka = kafka or KafkaSettings()
        self.runtime = runtime or RuntimeSettings.for_service(spec.name)
        self.codec = codec or make_codec(self.kafka)
        self.metrics = metrics or ServiceMetrics(spec.name)
        self._stop = threading.Event()
        self._consumer: Any = None
        self._producer: Any = None
        self._lag = edge.LagGauge(self.metrics, spec.name, LAG_INTERVAL_S)
        self._consumer_failed = False
        self._group = GroupWatch()
        self._calls = BoundedCalls()
        self._copartition = edge.CopartitionWatch()
        self._sweeper = Sweeper(self.kafka, self.transactional_id, spec, self.runtime, self.metrics)
        self.pacing = pace(
            spec.name,
            self.runtime,
            spec.model_budget,
            {**self.kafka.extra, **spec.extra_consumer_config},
        )
        self._inflight = InFlight(self.pacing.concurrency, heartbeat=self.metrics.beat)
        self.commit_policy = CommitPolicy.of(spec.name, self.runtime)
        self._open = Uncommitted()
        self._backoff = self.runtime.retry_backoff_initial_ms / 1000
        self.limits = Limits(clients.max_record_bytes(self.kafka))
        # the bound on one transaction's client calls (never past the transaction's)
        runtime = self.runtime
        calls_ms = min(runtime.transaction_call_timeout_ms, runtime.transaction_timeout_ms)
        self._call_bound_s = calls_ms / 1000
        self.metrics.progress.stuck_after_s = self.pacing.max_poll_interval_ms / 1000

    # -- lifecycle -----------------------------------------------------------------

    def stop(self) -> None:
        self._stop.set()

    def install_signal_handlers(self) -> None:
        """SIGTERM/SIGINT finish the open batch (commit or abort), then exit cleanly."""
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: self.stop())

    @property
    def transactional_id(self) -> str:
        """``<service>-<replica>``: also the static group member id and the client id."""
        return f"{self.spec.name}-{self.runtime.replica_id}"

    def _build_clients(self) -> None:
        config = {**self.pacing.consumer_config(), **self.spec.extra_consumer_config}
        self._producer, self._consumer = clients.build(
            self.kafka, self.transactional_id, self.spec.name, self.runtime, config
        )
        self._subscribe()

    def _subscribe(self) -> None:
        self._consumer.subscribe(
            list(self.spec.input_topics),
            on_assign=self._on_assign,
            on_revoke=self._on_revoke,
            on_lost=self._on_lost,
        )

    def _close_clients(self) -> None:
        clients.close(self._consumer)
        self._consumer = self._producer = None

    def _on_assign(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        # Cooperative rebalancing: ``partitions`` are the ones added, not the whole set.
        # The hook rebuilds state from committed output, so nothing may stay uncommitted.
        log.info("partitions assigned: %s", edge.describe_partitions(partitions))
        self._group.assigned()
        self._sweeper.watch.forget((tp.topic, tp.partition) for tp in partitions)
        self._drop_uncommitted()
        if self.spec.on_assign is not None:
            self.spec.on_assign(list(partitions))

    def _on_revoke(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        # Nothing is produced before the commit, so the uncommitted work is only
        # dropped and read again: its revoked part by the partitions' next owner.
        log.info("partitions revoked: %s", edge.describe_partitions(partitions))
        self._lag.forget((tp.topic, tp.partition) for tp in partitions)
        self._drop_uncommitted()

    def _on_lost(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        # Lost (not revoked): another member may already own them, and a zombie
        # commit would be fenced by the group generation.
        log.warning("partitions lost: %s", edge.describe_partitions(partitions))
        self._group.lost(time.monotonic())
        self._lag.forget((tp.topic, tp.partition) for tp in partitions)
        self._drop_uncommitted()

    def _connect(self) -> None:
        """Build the clients, retrying with backoff while the cluster is unreachable."""
        clients.connect(self._build_clients, self._close_clients, self._stop, self.runtime)

    def run(self) -> None:
        """Process until stopped. Returns after a clean shutdown.

        Raises :class:`ReplicaInUse` when another live process has this replica's id.
        """
        lock = ReplicaLock(self.transactional_id, self.kafka.bootstrap_servers)
        with lock, tuned_collector():
            self._run()

    def _run(self) -> None:
        self._connect()
        self._copartition.check(self._consumer, time.monotonic())
        policy = self.commit_policy
        started = self.pacing.summary(policy.interval_s, policy.max_messages)
        log.info("service started: %s", started, extra={"service": self.spec.name})
        try:
            while not self._stop.is_set():
                self.metrics.beat()
                batch = [
                    m for m in self._next_batch() if m.error() is None or not self._is_error(m)
                ]
                repair = self._group.due(time.monotonic())
                if self._consumer_failed or repair is not None:
                    self._repair(repair)
                    continue
                if batch:
                    self._process(batch)
                open_ = self._open
                if self.commit_policy.due(
                    len(open_.inputs), open_.opened_at, time.perf_counter(), bool(batch)
                ):
                    self._commit_open()
                self._lag.refresh(self._consumer)
                self.metrics.progress.lag(self._lag.total)
                self._copartition.check(self._consumer, time.monotonic())
                if stuck := self._sweeper.stuck(self._consumer, time.monotonic()):
                    self._sweep(stuck)
            self._commit_open()
        finally:
            self._close_clients()
            self._calls.shutdown()
            self._inflight.shutdown()
            log.info("service stopped", extra={"service": self.spec.name})

    def _repair(self, repair: Repair | None) -> None:
        """Rebuild the clients (a fatal consumer error, a loss never followed) or rejoin."""
        self._drop_uncommitted(rewind=False)  # the next owner reads it from the offsets
        if repair is Repair.REJOIN and not self._consumer_failed:
            rejoin(self._consumer, self._subscribe)
            return
        self._consumer_failed = False
        self._rebuild_clients()

    def _next_batch(self) -> list[Message]:
        size, wait = self.pacing.batch_size, self.runtime.batch_timeout_ms / 1000
        if not self._open.inputs:
            return edge.next_batch(self._consumer, size, wait)
        with CLOCK.timing("kafka"):  # a transaction is open: only take what is waiting
            return edge.next_batch(self._consumer, size, 0.0)

    def _is_error(self, message: Message) -> bool:
        if edge.replaced_member(message):
            self._group.replaced(self.transactional_id, time.monotonic())
        severity = edge.consumer_error(message)
        if severity is Severity.FATAL:
            log.error("rebuilding the clients after a fatal consumer error")
            self._consumer_failed = True
        return severity is not None

    # -- one batch -------------------------------------------------------------------

    def _process(self, batch: Sequence[Message]) -> None:
        """Handle ``batch`` into the open transaction (aged from when it was read)."""
        read_at = time.perf_counter()
        try:
            outputs, dead = transform(self.spec, self.codec, batch, self._inflight, self.limits)
        except TransientError as exc:
            self.metrics.retries.labels(self.spec.name).inc()
            self.metrics.failed(f"transient: {exc}")
            log.warning("transient failure, reading again in %.1fs: %s", self._backoff, exc)
            self._read_again(batch)
            return
        except CrashedOnce as exc:
            self._suspect(exc)
            self._read_again(batch)
            return
        self._open.add(batch, outputs, dead, read_at)

    def _suspect(self, exc: CrashedOnce) -> None:
        """Note inputs whose handler raised: a second crash on one dead-letters it."""
        suspects = self.limits.suspects
        if len(suspects) > MAX_SUSPECTS:
            suspects.clear()
        for where, crash in exc.crashed:
            suspects.add(where)
            self.metrics.failed(f"handler raised on {where[0]}[{where[1]}]@{where[2]}: {crash}")
            log.error(
                "handler raised on %s[%d] offset %d; reading it once more: %s",
                *where,
                crash,
                exc_info=crash.__cause__,
            )

    def _read_again(self, batch: Sequence[Message]) -> None:
        """Forget the open work and ``batch``, back off, and read them again."""
        self._drop_uncommitted(also=batch)
        self._stop.wait(self._backoff)
        self._backoff = min(self._backoff * 2, self.runtime.retry_backoff_max_ms / 1000)

    def _commit_open(self) -> None:
        """Commit the open transaction (if anything is open) and count what it held."""
        open_, self._open = self._open, Uncommitted()
        if not open_.inputs or not self._commit(open_.inputs, open_.outputs):
            return
        if self.spec.on_commit is not None:
            self.spec.on_commit()
        self._backoff = self.runtime.retry_backoff_initial_ms / 1000
        seconds = time.perf_counter() - open_.opened_at
        self.metrics.committed(
            self.spec.name, len(open_.inputs), len(open_.outputs), open_.dead, seconds
        )

    def _drop_uncommitted(self, also: Sequence[Message] = (), *, rewind: bool = True) -> None:
        """Forget the open transaction's work; unless the consumer is gone, read it again."""
        inputs = [*self._open.inputs, *also]
        self._open = Uncommitted()
        if rewind and inputs:
            self._rewind(inputs)
        else:
            self._forget_uncommitted()

    # -- transactions ----------------------------------------------------------------

    def _commit(self, batch: Sequence[Message], outputs: list[Output]) -> bool:
        """Publish outputs and offsets atomically; False when the batch was rewound."""
        bound = self._call_bound_s
        producer = self._producer
        offsets = next_offsets(batch)
        group = self._consumer.consumer_group_metadata()

        def transact() -> None:
            # One producer for the whole transaction: a worker outliving the watchdog
            # must never act on the producer the loop rebuilt meanwhile.
            deadline = Deadline(bound)
            producer.begin_transaction()
            for output in outputs:
                edge.produce(producer, *output)
            producer.send_offsets_to_transaction(offsets, group, deadline.left())
            commit_within(producer, deadline)

        try:
            with CLOCK.timing("kafka"):
                self._calls.run(transact, bound)
            return True
        except KafkaException as exc:
            return self._recover(batch, exc)
        except ClientStuckError as exc:
            self.metrics.aborted.labels(self.spec.name).inc()
            log.error("%s; abandoning the clients and resuming from committed offsets", exc)
            self._rebuild_clients()
            return False

    def _sweep(self, stuck: list[edge.Key]) -> None:
        """End a forgotten transaction holding ``stuck`` (:mod:`~tracebound.runtime.hanging`)."""
        self._commit_open()
        bound, producer, consumer = self._call_bound_s, self._producer, self._consumer
        try:
            self._calls.run(lambda: self._sweeper.sweep(producer, consumer, stuck, bound), bound)
        except (KafkaException, ClientStuckError) as exc:
            log.error("sweep failed (%s), rebuilding clients", exc)
            self._rebuild_clients()

    def _rebuild_clients(self) -> None:
        """New clients for wedged or failed ones: never wait long on the old ones."""
        self._calls.abandon()
        consumer, self._consumer, self._producer = self._consumer, None, None
        close_within(consumer)
        self._connect()
        self._group.rebuilt()

    def _recover(self, batch: Sequence[Message], exc: KafkaException) -> bool:
        self.metrics.aborted.labels(self.spec.name).inc()
        self.metrics.failed(f"transaction aborted: {exc}")
        if severity_of(exc) is Severity.FATAL:
            log.error("fatal producer error, rebuilding clients: %s", exc)
            self._rebuild_clients()
            return False
        log.warning("aborting transaction and rewinding: %s", exc)
        bound = self._call_bound_s
        producer = self._producer
        try:
            self._calls.run(lambda: producer.abort_transaction(bound), bound)
        except (KafkaException, ClientStuckError) as abort_exc:
            log.error("abort failed (%s), rebuilding clients", abort_exc)
            self._rebuild_clients()
            return False
        self._rewind(batch)
        return False

    def _forget_uncommitted(self) -> None:
        if self.spec.on_rewind is not None:
            self.spec.on_rewind()

    def _rewind(self, batch: Sequence[Message]) -> None:
        """Seek every partition of the batch back to its first message of the batch."""
        self._forget_uncommitted()
        for (topic, partition), offset in first_offsets(batch).items():
            try:
                self._consumer.seek(TopicPartition(topic, partition, offset))
            except KafkaException as exc:  # partition no longer ours: its new owner resumes
                log.info("seek skipped for %s[%d]: %s", topic, partition, exc.args[0].str())
