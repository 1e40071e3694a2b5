"""The topic table (``schemas/topics.json``): which event lives on which topic.

The table is the only place topic names are written; the constants below and the
topology (:mod:`tracebound.topology`) look them up by event.
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


@cache
def topic_table() -> tuple[TopicSpec, ...]:
    path = SCHEMA_DIR / "topics.json"
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        return tuple(
            TopicSpec(name=t["name"], event=t["event"], config=dict(t.get("config", {})))
            for t in raw["topics"]
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"topic table {path} is unreadable: {exc}") from exc


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
DEAD_LETTERS = topic_for("DeadLetter")
