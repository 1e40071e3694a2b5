"""Typed settings. Every knob comes from the environment (or a .env file).

Prefixes: ``TRACEBOUND_KAFKA_``, ``TRACEBOUND_PG_``, ``TRACEBOUND_STACK_`` and one per
service (``TRACEBOUND_<SERVICE>_``, e.g. ``TRACEBOUND_GATEKEEPER_BATCH_SIZE``).
Secrets are ``SecretStr`` so they never print in reprs or logs.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


def _xdg(var: str, fallback: str) -> Path:
    base = os.environ.get(var)
    return Path(base) if base else Path.home() / fallback


class StackSettings(BaseSettings):
    """Where the local stack keeps its state and which loopback ports it uses."""

    model_config = SettingsConfigDict(env_prefix="TRACEBOUND_STACK_", extra="ignore")

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


class KafkaSettings(BaseSettings):
    """Connection to the Kafka cluster; security settings pass through to librdkafka."""

    model_config = SettingsConfigDict(env_prefix="TRACEBOUND_KAFKA_", extra="ignore")

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


class PostgresSettings(BaseSettings):
    """Connection to PostgreSQL; by default the local stack's private cluster."""

    model_config = SettingsConfigDict(env_prefix="TRACEBOUND_PG_", extra="ignore")

    dsn: SecretStr = SecretStr("postgresql://tracebound@127.0.0.1:15432/tracebound")


class RuntimeSettings(BaseSettings):
    """Knobs of one service process; build with :meth:`for_service` to get its prefix."""

    model_config = SettingsConfigDict(extra="ignore")

    replica_id: str = "0"
    batch_size: int = Field(default=500, ge=1, le=100_000)
    batch_timeout_ms: int = Field(default=100, ge=1, le=60_000)
    transaction_timeout_ms: int = Field(default=30_000, ge=1_000)
    retry_backoff_initial_ms: int = Field(default=200, ge=1)
    retry_backoff_max_ms: int = Field(default=10_000, ge=1)
    metrics_host: str = "127.0.0.1"
    metrics_port: int = Field(
        default=0, ge=0, le=65535, description="0 disables /metrics and /healthz"
    )

    @classmethod
    def for_service(cls, service: str) -> RuntimeSettings:
        prefix = f"TRACEBOUND_{service.upper().replace('-', '_')}_"
        return cls(_env_prefix=prefix)
