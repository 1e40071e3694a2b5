"""Handles on the real broker and database the integration tests run against."""

from __future__ import annotations

import contextlib
import gc
import os
import uuid
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field

from services.executor.tools.settings import DEMO_ENV
from tracebound import resources
from tracebound.settings import KafkaSettings, PostgresSettings, StackSettings


@dataclass
class StackHandle:
    kind: str  # local | docker | external
    bootstrap: str
    pg_dsn: str
    stack_settings: StackSettings | None = None
    _closers: list[object] = field(default_factory=list)

    @property
    def kafka(self) -> KafkaSettings:
        return KafkaSettings(bootstrap_servers=self.bootstrap)

    @property
    def postgres(self) -> PostgresSettings:
        return PostgresSettings.model_validate({"dsn": self.pg_dsn})

    def env(self) -> dict[str, str]:
        """Environment for subprocesses (services under test), from any working directory."""
        env = dict(os.environ)
        env["TRACEBOUND_KAFKA_BOOTSTRAP_SERVERS"] = self.bootstrap
        env["TRACEBOUND_PG_DSN"] = self.pg_dsn
        env.update(DEMO_ENV)  # the tests' data is the demo environment, asked for explicitly
        return resources.child_env(env)

    def stop_broker(self) -> None:
        from tracebound.stack import kafka

        assert self.stack_settings is not None, "only the local stack can stop its broker"
        kafka.stop_broker(self.stack_settings)

    def start_broker(self) -> None:
        from tracebound.stack import kafka

        assert self.stack_settings is not None, "only the local stack can start its broker"
        kafka.start_broker(self.stack_settings)

    def topic(self, prefix: str, partitions: int = 3) -> str:
        """A fresh topic for one test, so tests never see each other's events."""
        from tracebound.stack.topics import ensure_topics

        name = f"test.{prefix}.{uuid.uuid4().hex[:8]}"
        ensure_topics(self.kafka, {name: {}}, partitions)
        return name


def external_stack() -> StackHandle:
    return StackHandle(
        kind="external",
        bootstrap=os.environ["TRACEBOUND_KAFKA_BOOTSTRAP_SERVERS"],
        pg_dsn=PostgresSettings().dsn.get_secret_value(),
    )


def _docker_ping() -> bool:
    try:
        import docker  # type: ignore[import-untyped]

        docker.from_env(timeout=3).ping()
        return True
    except Exception:
        return False


def _docker_reachable() -> bool:
    # docker-py leaves the socket of a failed connection (no daemon) open: collect it
    # here, where that is expected, rather than as a ResourceWarning in a later test.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        reachable = _docker_ping()
        gc.collect()
    return reachable


@contextlib.contextmanager
def _docker() -> Iterator[StackHandle]:
    from testcontainers.kafka import KafkaContainer
    from testcontainers.postgres import PostgresContainer

    with KafkaContainer().with_kraft() as kafka, PostgresContainer("postgres:16") as pg:
        dsn = pg.get_connection_url().replace("postgresql+psycopg2://", "postgresql://")
        handle = StackHandle(kind="docker", bootstrap=kafka.get_bootstrap_server(), pg_dsn=dsn)
        from tracebound.stack.topics import ensure_topics
        from tracebound.topics import topic_configs

        ensure_topics(handle.kafka, topic_configs(), 3)
        yield handle


def docker_stack() -> contextlib.AbstractContextManager[StackHandle] | None:
    return _docker() if _docker_reachable() else None


@contextlib.contextmanager
def local_stack() -> Iterator[StackHandle]:
    from tracebound.stack import stack as local

    settings = StackSettings()
    result = local.up(settings)
    started_here = bool(result.started)
    handle = StackHandle(
        kind="local",
        bootstrap=result.kafka_bootstrap,
        pg_dsn=result.pg_dsn,
        stack_settings=settings,
    )
    try:
        yield handle
    finally:
        if started_here and os.environ.get("TRACEBOUND_TEST_KEEP_STACK") != "1":
            local.down(settings)
