"""Settings and the table of read models: which topics feed which table.

Every model is its own consumer group (``<group_prefix><name>``), so one slow model
never holds the others back and each resumes from its own checkpoint. The group
prefix is a setting so that tests (or a second deployment against the same
cluster) can project into another schema without sharing partitions with the
stack's projection process.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from tracebound import topics
from tracebound.errors import InvalidInputError
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


@dataclass(frozen=True, slots=True)
class ReadModel:
    """One read model: its table, its key column and the topics it is projected from."""

    name: str
    key: str
    topics: tuple[str, ...]

    def group(self, settings: ProjectionSettings) -> str:
        return f"{settings.group_prefix}{self.name}"


MODELS: dict[str, ReadModel] = {
    m.name: m
    for m in (
        ReadModel(
            "diagnosis_run",
            "run_id",
            (
                topics.REQUESTS,
                topics.PLANS,
                topics.RETRIES,
                topics.TOOL_INVOCATIONS,
                topics.EVIDENCE,
                topics.GATEKEEPER_RESULTS,
                topics.VERDICTS,
                topics.ANSWERS,
                topics.AGENT_STEPS,
            ),
        ),
        ReadModel("tool_invocation", "id", (topics.TOOL_INVOCATIONS,)),
        ReadModel("agent_step", "event_id", (topics.AGENT_STEPS,)),
    )
}

ALL_TOPICS: tuple[str, ...] = tuple(dict.fromkeys(t for m in MODELS.values() for t in m.topics))


def select_models(name: str | None) -> list[ReadModel]:
    """One model by name, or all of them; an unknown name is a usage error."""
    if name is None:
        return list(MODELS.values())
    if name not in MODELS:
        raise InvalidInputError(f"unknown read model {name!r}; choose from {', '.join(MODELS)}")
    return [MODELS[name]]
