"""Settings of the projection process (the read models are :mod:`projections.models`).

The consumer-group prefix is a setting so that tests (or a second deployment
against the same cluster) can project into another schema without sharing
partitions with the stack's projection process.
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from tracebound.settings import RuntimeSettings, TraceboundSettings

SERVICE = "projections"


class ProjectionSettings(TraceboundSettings):
    model_config = SettingsConfigDict(env_prefix="TRACEBOUND_PROJECTIONS_", frozen=True)

    group_prefix: str = "projection."
    idle_poll_ms: int = 200


class ProjectionRuntimeSettings(RuntimeSettings):
    """The runtime knobs with a larger batch: a run's row is written once per batch it is
    in, so when catching up a bigger batch means fewer rewrites of the same row."""

    batch_size: int = Field(default=2000, ge=1, le=100_000)
