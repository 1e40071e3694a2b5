"""Typed settings of the evidence tools (env prefix ``TRACEBOUND_TOOLS_``).

Why the defaults: the embedded demo environment (in-memory alerts, PostgreSQL
log store and knowledge base) lets the whole pipeline run offline; a deployment
switches one backend at a time to Prometheus or Loki. ``demo_now`` is the fixed
clock of the demo data, so every demo timestamp — and therefore every evidence
text — is the same on every machine and in every replay.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import SettingsConfigDict

from tracebound import resources
from tracebound.errors import ConfigError
from tracebound.settings import PostgresSettings, TraceboundSettings

PACKAGE_DIR = Path(__file__).resolve().parent

DEMO_NOW = datetime(2026, 7, 8, 23, 10, 0, tzinfo=UTC)


class ToolSettings(TraceboundSettings):
    """Which backend each tool uses and how to reach it."""

    model_config = SettingsConfigDict(env_prefix="TRACEBOUND_TOOLS_", frozen=True)

    metrics_backend: Literal["demo", "prometheus"] = "demo"
    prometheus_url: str | None = None
    logs_backend: Literal["postgres", "loki"] = "postgres"
    loki_url: str | None = None
    logs_region: str = Field(default="local", description="region label of the log envelope")
    http_timeout_s: float = Field(default=5.0, gt=0, le=120)
    demo_now: datetime = DEMO_NOW
    demo_data_dir: Path = PACKAGE_DIR / "demo_data"
    runbooks_dir: Path = resources.path("runbooks")
    relevance_rules: Path = resources.path("rules", "knowledge-relevance.json")
    postgres: PostgresSettings = Field(default_factory=PostgresSettings)

    @field_validator("demo_now")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        """A naive ``demo_now`` is read as UTC; stored timestamps are always UTC."""
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)

    @property
    def dsn(self) -> str:
        return self.postgres.dsn.get_secret_value()

    def require_url(self, which: Literal["prometheus", "loki"]) -> str:
        """The backend URL without a trailing slash; a missing one is a config error."""
        url = self.prometheus_url if which == "prometheus" else self.loki_url
        if not url:
            env = f"TRACEBOUND_TOOLS_{which.upper()}_URL"
            raise ConfigError(f"{which} backend selected but {env} is not set")
        return url.rstrip("/")
