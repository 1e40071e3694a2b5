"""Typed settings of the ingest service (env prefix ``TRACEBOUND_INGEST_``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr
from pydantic_settings import SettingsConfigDict

from tracebound.pages import PageAddress
from tracebound.topics import ALERTS

MIB = 1024 * 1024


class IngestSettings(PageAddress):
    """Where the HTTP API listens and how it turns alerts into runs.

    ``token`` is a ``SecretStr`` so it never shows in reprs or logs; when it is
    unset the API is open, which is only sensible on the loopback default.
    """

    model_config = SettingsConfigDict(env_prefix="TRACEBOUND_INGEST_", frozen=True)

    token: SecretStr | None = None
    max_body_bytes: int = Field(default=MIB, ge=1024, le=64 * MIB)
    dedup_window_s: int = Field(
        default=3600,
        ge=0,
        le=30 * 86400,
        description="alerts without startsAt: a re-send inside this window reuses the run",
    )
    group_by: Literal["group", "alert"] = Field(
        default="group",
        description="group: one run per webhook alert group; alert: one run per firing alert",
    )
    answer_wait_s: float = Field(default=30.0, gt=0, le=120)
    language: Literal["zh", "en"] = Field(default="en", description="language of alert runs")
    lookback_s: int = Field(
        default=3600, ge=0, le=7 * 86400, description="event history the run buffer loads"
    )
    max_runs: int = Field(default=5000, ge=10, le=1_000_000)
    max_buffer_mb: int = Field(
        default=64, ge=1, le=65_536, description="event bytes the run buffer keeps at most"
    )
    alerts_topic: str = Field(
        default=ALERTS,
        pattern=r"^[A-Za-z0-9._-]{0,249}$",
        description="input topic of Alertmanager JSON records; empty turns the reader off",
    )

    @property
    def base_url(self) -> str:
        """The URL a local client (the demo, ``curl``) reaches the service at."""
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::", "") else self.host  # noqa: S104
        return f"http://{host}:{self.port}"
