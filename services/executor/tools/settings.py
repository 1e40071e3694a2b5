"""Typed settings of the evidence tools (env prefix ``TRACEBOUND_TOOLS_``).

Why the defaults: nothing answers from data the run did not see. Metrics come
from the alerts the request carries (``request``) until Prometheus is
configured; logs have no backend until Loki or VictoriaLogs is configured, so a
log query fails visibly (``evidence_status=failed``) instead of searching
shipped records. The demo environment (in-memory alerts and the PostgreSQL log
store's shipped records) answers only where it is asked for: ``tracebound
demo``, the evaluations and the tests set :data:`DEMO_ENV`. The PostgreSQL log
store has no other source of records, so it is offered only as the ``demo``
backend. The knowledge base over the project's runbooks is not demo data and always runs.
``demo_now`` is the fixed clock of the demo data, so every demo timestamp — and
therefore every evidence text — is the same on every machine and in every replay.
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

# The environment that selects the demo environment for every tool: what
# ``tracebound demo``, the evaluations and the tests hand to the services they start.
DEMO_ENV: dict[str, str] = {
    "TRACEBOUND_TOOLS_METRICS_BACKEND": "demo",
    "TRACEBOUND_TOOLS_LOGS_BACKEND": "demo",
}
NO_LOGS_BACKEND = "no logs backend configured (TRACEBOUND_TOOLS_LOGS_BACKEND)"


class ToolSettings(TraceboundSettings):
    """Which backend each tool uses and how to reach it."""

    model_config = SettingsConfigDict(env_prefix="TRACEBOUND_TOOLS_", frozen=True)

    metrics_backend: Literal["request", "demo", "prometheus"] = "request"
    prometheus_url: str | None = None
    logs_backend: Literal["none", "demo", "loki", "victorialogs"] = "none"
    loki_url: str | None = None
    victorialogs_url: str | None = None
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

    @classmethod
    def demo(cls) -> ToolSettings:
        """Every tool on the demo environment, whatever the process environment says."""
        return cls(metrics_backend="demo", logs_backend="demo")

    @property
    def dsn(self) -> str:
        return self.postgres.dsn.get_secret_value()

    def require_url(self, which: Literal["prometheus", "loki", "victorialogs"]) -> str:
        """The backend URL without a trailing slash; a missing one is a config error."""
        urls = {
            "prometheus": self.prometheus_url,
            "loki": self.loki_url,
            "victorialogs": self.victorialogs_url,
        }
        url = urls[which]
        if not url:
            env = f"TRACEBOUND_TOOLS_{which.upper()}_URL"
            raise ConfigError(f"{which} backend selected but {env} is not set")
        return url.rstrip("/")
