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
    # Consumers of ``diagnosis_run`` in one process (one thread each, sharing its
    # consumer group, so its partitions are split between them): while one waits for
    # the database or a fetch, another folds. Three is one per partition at the
    # default partition count (and an equal share at 6, 9 or 12): with two, one
    # worker held two partitions of three, and a catch-up waited for it.
    run_workers: int = Field(default=3, ge=1, le=16)


class ProjectionRuntimeSettings(RuntimeSettings):
    """The runtime knobs of the projection process.

    A worker folds every batch as it comes and writes what it folded once per commit
    window (:mod:`projections.live`): ``commit_interval_ms`` after the window's first
    batch, sooner once ``commit_max_messages`` were folded, or when nothing more is
    waiting and the window is ``commit_min_ms`` old: a trickle of events (a pipeline at
    tens of requests per second) is written a few times a second, not at every event,
    which would cost a PostgreSQL transaction and the rows' JSON per event.
    A run's row is written once per window it is in, so the window is longer than a
    role's transaction; the batch only bounds the events decoded at once."""

    batch_size: int = Field(default=500, ge=1, le=100_000)
    commit_interval_ms: int = Field(default=1000, ge=0, le=60_000)
    commit_max_messages: int = Field(default=2000, ge=1, le=1_000_000)
    commit_min_ms: int = Field(default=250, ge=0, le=60_000)
