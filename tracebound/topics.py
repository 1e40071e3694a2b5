"""The topic table (``schemas/topics.json``): which event lives on which topic."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from tracebound.errors import ConfigError

REPO_ROOT = Path(__file__).resolve().parent.parent
SCHEMA_DIR = REPO_ROOT / "schemas"


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


REQUESTS = "tracebound.requests"
PLANS = "tracebound.plans"
RETRIES = "tracebound.retries"
TOOL_INVOCATIONS = "tracebound.tool-invocations"
EVIDENCE = "tracebound.evidence"
GATEKEEPER_RESULTS = "tracebound.gatekeeper-results"
VERDICTS = "tracebound.verdicts"
ANSWERS = "tracebound.answers"
AGENT_STEPS = "tracebound.agent-steps"
DEAD_LETTERS = "tracebound.dead-letters"
