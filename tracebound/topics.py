"""The topic table (``schemas/topics.json``): which event lives on which topic.

The table is the only place topic names are written; the constants below and the
topology (:mod:`tracebound.topology`) look them up by event. Its ``inputs`` are the
topics other programs write to in their own format (Alertmanager JSON): they carry no
event of the contract, so no codec reads them, but the stack creates them all the same.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache

from tracebound import resources
from tracebound.errors import ConfigError

SCHEMA_DIR = resources.path("schemas")


@dataclass(frozen=True, slots=True)
class TopicSpec:
    name: str
    event: str
    config: dict[str, str]


@dataclass(frozen=True, slots=True)
class InputTopicSpec:
    """A topic other programs write to: its records are not events of the contract."""

    name: str
    kind: str
    format: str
    config: dict[str, str]


@cache
def _table() -> tuple[tuple[TopicSpec, ...], tuple[InputTopicSpec, ...]]:
    path = SCHEMA_DIR / "topics.json"
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        events = tuple(
            TopicSpec(name=t["name"], event=t["event"], config=dict(t.get("config", {})))
            for t in raw["topics"]
        )
        inputs = tuple(
            InputTopicSpec(
                name=t["name"], kind=t["kind"], format=t["format"], config=dict(t["config"])
            )
            for t in raw.get("inputs", [])
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"topic table {path} is unreadable: {exc}") from exc
    return events, inputs


def topic_table() -> tuple[TopicSpec, ...]:
    """The event topics: one per event of the contract."""
    return _table()[0]


def input_topic_table() -> tuple[InputTopicSpec, ...]:
    """The input topics: written by other programs, read by a role."""
    return _table()[1]


def topic_configs() -> dict[str, dict[str, str]]:
    """Every topic the stack creates, event and input topics alike, with its config."""
    configs = {spec.name: spec.config for spec in topic_table()}
    return configs | {spec.name: spec.config for spec in input_topic_table()}


def input_topic(kind: str) -> str:
    for spec in input_topic_table():
        if spec.kind == kind:
            return spec.name
    raise ConfigError(f"no input topic of kind {kind!r} in schemas/topics.json")


def topic_for(event: str) -> str:
    for spec in topic_table():
        if spec.event == event:
            return spec.name
    raise ConfigError(f"no topic for event {event!r} in schemas/topics.json")


# The topic of each event, by name, for code that reads or writes a fixed topic.
REQUESTS = topic_for("DiagnosisRequested")
PLANS = topic_for("PlanProduced")
RETRIES = topic_for("RetryRequested")
TOOL_INVOCATIONS = topic_for("ToolInvoked")
EVIDENCE = topic_for("EvidenceProduced")
GATEKEEPER_RESULTS = topic_for("GatekeeperResult")
VERDICTS = topic_for("Verdict")
ANSWERS = topic_for("Answer")
AGENT_STEPS = topic_for("AgentStep")
RESOLUTIONS = topic_for("AlertsResolved")
DEAD_LETTERS = topic_for("DeadLetter")
# The default input topic of Alertmanager webhook JSON written by other programs.
ALERTS = input_topic("alerts")


def copartitioned() -> tuple[str, ...]:
    """The topics keyed by ``run_id``: all event topics but the dead letters.

    A run's events must land on the same partition number of each of them, so that
    one replica of a role sees all of a run at a stage (the composer's once-per-run
    decision relies on it): they must all have one partition count.
    """
    return tuple(spec.name for spec in topic_table() if spec.name != DEAD_LETTERS)
