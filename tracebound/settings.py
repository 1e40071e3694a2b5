"""Typed settings. Every knob comes from the environment (or a .env file).

Prefixes: ``TRACEBOUND_KAFKA_``, ``TRACEBOUND_PG_``, ``TRACEBOUND_STACK_`` and one per
service (``TRACEBOUND_<SERVICE>_``, e.g. ``TRACEBOUND_GATEKEEPER_BATCH_SIZE``).
Secrets are ``SecretStr`` so they never print in reprs or logs. Every settings
class derives from :class:`TraceboundSettings`: it is frozen (a process reads its
environment once; nothing changes a setting behind the back of the code that read
it) and registered, so that :mod:`tracebound.settings_check` can tell which
``TRACEBOUND_*`` variables no class reads and report them instead of ignoring them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Self

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from tracebound.replica import default_replica_id

# Variables read without a settings class; known to the unknown-variable check.
PLAIN_VARIABLES: dict[str, str] = {
    "TRACEBOUND_PROMPTS_DIR": "another folder of prompt and skill files (replay candidates)",
    "TRACEBOUND_BENCH_PROFILE": "1: the benchmarks also profile",
    "TRACEBOUND_TEST_KEEP_STACK": "1: the test session leaves the local stack it started running",
}

_CLASSES: list[type[TraceboundSettings]] = []
_SERVICES: set[str] = set()


class TraceboundSettings(BaseSettings):
    """Base of every settings class: frozen, and registered when defined."""

    model_config = SettingsConfigDict(extra="ignore", frozen=True)

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        _CLASSES.append(cls)


def settings_classes() -> tuple[type[TraceboundSettings], ...]:
    """Every settings class defined so far in this process."""
    return tuple(_CLASSES)


def prefix_for(service: str) -> str:
    """``TRACEBOUND_<SERVICE>_``, the prefix of the classes read once per service."""
    return f"TRACEBOUND_{service.upper().replace('-', '_')}_"


def service_prefix(service: str) -> str:
    """:func:`prefix_for`, recording the service: its variables are known in this process."""
    _SERVICES.add(service)
    return prefix_for(service)


def services_seen() -> frozenset[str]:
    """The services whose per-service settings this process has read."""
    return frozenset(_SERVICES)


def _xdg(var: str, fallback: str) -> Path:
    base = os.environ.get(var)
    return Path(base) if base else Path.home() / fallback


class StackSettings(TraceboundSettings):
    """Where the local stack keeps its state and which loopback ports it uses."""

    model_config = SettingsConfigDict(env_prefix="TRACEBOUND_STACK_", frozen=True)

    state_dir: Path = Field(
        default_factory=lambda: _xdg("XDG_STATE_HOME", ".local/state") / "tracebound"
    )
    cache_dir: Path = Field(default_factory=lambda: _xdg("XDG_CACHE_HOME", ".cache") / "tracebound")
    host: str = "127.0.0.1"
    kafka_port: int = 19092
    controller_port: int = 19093
    pg_port: int = 15432
    kafka_heap: str = "512m"
    kafka_version: str = "4.4.0"
    partitions: int = Field(default=3, ge=1, le=256)
    brokers: int | None = Field(
        default=None,
        ge=1,
        le=5,
        description="Kafka nodes of a new stack (`up --brokers`); unset: as the state folder holds",
    )


class KafkaSettings(TraceboundSettings):
    """Connection to the Kafka cluster; security settings pass through to librdkafka."""

    model_config = SettingsConfigDict(env_prefix="TRACEBOUND_KAFKA_", frozen=True)

    bootstrap_servers: str = "127.0.0.1:19092"
    security_protocol: str | None = None
    sasl_mechanism: str | None = None
    sasl_username: str | None = None
    sasl_password: SecretStr | None = None
    ssl_ca_location: str | None = None
    ssl_certificate_location: str | None = None
    ssl_key_location: str | None = None
    ssl_key_password: SecretStr | None = None
    extra: dict[str, str] = Field(
        default_factory=dict,
        description='Any other librdkafka property, as JSON: {"socket.keepalive.enable": "true"}',
    )
    schema_registry_url: str | None = None
    schema_registry_basic_auth: SecretStr | None = Field(
        default=None, description="user:password for the schema registry"
    )

    def client_config(self) -> dict[str, str]:
        """librdkafka properties common to producers, consumers and admin clients."""
        conf: dict[str, str] = {"bootstrap.servers": self.bootstrap_servers}
        plain = {
            "security.protocol": self.security_protocol,
            "sasl.mechanism": self.sasl_mechanism,
            "sasl.username": self.sasl_username,
            "ssl.ca.location": self.ssl_ca_location,
            "ssl.certificate.location": self.ssl_certificate_location,
            "ssl.key.location": self.ssl_key_location,
        }
        conf.update({k: v for k, v in plain.items() if v})
        if self.sasl_password is not None:
            conf["sasl.password"] = self.sasl_password.get_secret_value()
        if self.ssl_key_password is not None:
            conf["ssl.key.password"] = self.ssl_key_password.get_secret_value()
        conf.update(self.extra)
        return conf


class PostgresSettings(TraceboundSettings):
    """Connection to PostgreSQL; by default the local stack's private cluster."""

    model_config = SettingsConfigDict(env_prefix="TRACEBOUND_PG_", frozen=True)

    dsn: SecretStr = SecretStr("postgresql://tracebound@127.0.0.1:15432/tracebound")


class RuntimeSettings(TraceboundSettings):
    """Knobs of one service process; build with :meth:`for_service` to get its prefix."""

    model_config = SettingsConfigDict(frozen=True)

    replica_id: str = Field(
        default_factory=default_replica_id,
        min_length=1,
        max_length=100,
        pattern=r"^[A-Za-z0-9._-]+$",
        description="transactional.id, group.instance.id and client.id: <service>-<replica>",
    )
    batch_size: int = Field(default=500, ge=1, le=100_000)
    batch_timeout_ms: int = Field(default=100, ge=1, le=60_000)
    transaction_timeout_ms: int = Field(default=30_000, ge=1_000)
    commit_interval_ms: int = Field(
        default=100,
        ge=0,
        le=60_000,
        description="longest a transaction stays open while input keeps coming; 0: every poll",
    )
    commit_max_messages: int = Field(
        default=5_000, ge=1, le=1_000_000, description="most inputs in one transaction"
    )
    transaction_call_timeout_ms: int = Field(
        default=10_000,
        ge=1_000,
        description="bound on one transaction's Kafka calls; past it the clients are rebuilt",
    )
    concurrency: int | None = Field(
        default=None,
        ge=1,
        le=256,
        description=(
            "handler calls in flight per batch; unset: 32 per model call an input usually"
            " makes with a model (64 for the executor), else 1"
        ),
    )
    max_poll_interval_ms: int | None = Field(
        default=None,
        ge=10_000,
        le=86_400_000,
        description="librdkafka max.poll.interval.ms; unset: derived from the model time budget",
    )
    retry_backoff_initial_ms: int = Field(default=200, ge=1)
    retry_backoff_max_ms: int = Field(default=10_000, ge=1)
    metrics_host: str = "127.0.0.1"
    metrics_port: int = Field(
        default=0, ge=0, le=65535, description="0 disables /metrics and /healthz"
    )

    @classmethod
    def for_service(cls, service: str) -> Self:
        return cls(_env_prefix=service_prefix(service))
