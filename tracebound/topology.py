"""The topology, declared once: which role accepts and emits which events, which
events feed each read model, and what is read without a consumer group.

Roles and read models name *events*; the topic of each event comes from the topic
table (``schemas/topics.json``, one topic per event). Everything that needs a set
of topics — a service's input topics, the stack's lag report, the projection
workers, the sentinel's watch, the API's run reader, the replay recordings —
derives it from here, so adding an event or rewiring a role is one edit, and the
README's architecture diagram is checked against this module by a test.

This module is data: it imports nothing from ``services``, ``projections`` or
``replay``, and no event classes (those map names to types where they are used).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tracebound.topics import topic_for

DEAD_LETTER = "DeadLetter"
AGENT_STEP = "AgentStep"
ALERTS_RESOLVED = "AlertsResolved"
# The events that move a run from stage to stage, in topic-table order.
STAGE_EVENTS: tuple[str, ...] = (
    "DiagnosisRequested",
    "PlanProduced",
    "RetryRequested",
    "ToolInvoked",
    "EvidenceProduced",
    "GatekeeperResult",
    "Verdict",
    "Answer",
)
# Every event that belongs to a run: its stages, the model calls made for it, and the
# resolution of its alerts (a fact recorded on the run that no role answers).
RUN_EVENTS: tuple[str, ...] = (*STAGE_EVENTS, AGENT_STEP, ALERTS_RESOLVED)
# What the sentinel counts as progress. Tool invocations are left out: the executor
# commits them in one transaction with the round's evidence, so they never show
# progress the evidence does not.
WATCHED_EVENTS: tuple[str, ...] = tuple(e for e in STAGE_EVENTS if e != "ToolInvoked")


def topics_of(events: Iterable[str]) -> tuple[str, ...]:
    """The topics of ``events``, in order, each once."""
    return tuple(dict.fromkeys(topic_for(event) for event in events))


@dataclass(frozen=True, slots=True)
class Role:
    """One process of the pipeline.

    ``accepts`` are the events it consumes as its own consumer group (its input
    topics, whose lag it reports); ``watches`` are events it reads without a group
    from a look-back point (no offsets, no lag); ``emits`` is everything it writes.
    ``model`` says whether it calls a model (its ``rules``/``llm`` mode, its model
    budget, its start-up check). ``wiring`` is the dotted path
    (``module:function``) of the factory that builds its handler and hooks for the
    role kit (:mod:`services.common.kit`); roles with none start their own way.
    """

    name: str
    accepts: tuple[str, ...] = ()
    emits: tuple[str, ...] = ()
    watches: tuple[str, ...] = ()
    model: bool = False
    wiring: str = ""

    @property
    def input_topics(self) -> tuple[str, ...]:
        return topics_of(self.accepts)

    @property
    def output_topics(self) -> tuple[str, ...]:
        return topics_of(self.emits)

    @property
    def watched_topics(self) -> tuple[str, ...]:
        return topics_of(self.watches)

    @property
    def stage_topics(self) -> tuple[str, ...]:
        """Its inputs, then the stage events it writes: what a replay of it reads."""
        stage = (e for e in (*self.accepts, *self.emits) if e in STAGE_EVENTS)
        return topics_of(stage)


@dataclass(frozen=True, slots=True)
class ReadModelSpec:
    """One PostgreSQL read model: its table, its key column and the events it is built from."""

    name: str
    key: str
    events: tuple[str, ...]

    @property
    def topics(self) -> tuple[str, ...]:
        return topics_of(self.events)


READ_MODELS: tuple[ReadModelSpec, ...] = (
    ReadModelSpec("diagnosis_run", "run_id", RUN_EVENTS),
    ReadModelSpec("tool_invocation", "id", ("ToolInvoked",)),
    ReadModelSpec("agent_step", "event_id", (AGENT_STEP,)),
    ReadModelSpec("dead_letter", "event_id", (DEAD_LETTER,)),
)

# In start order: the front door first, the read side last.
ROLES: tuple[Role, ...] = (
    # The ingest also reads the alerts input topic (not an event topic, see
    # ``schemas/topics.json`` "inputs"); what it cannot parse goes to the dead letters.
    Role(
        "ingest",
        emits=("DiagnosisRequested", ALERTS_RESOLVED, DEAD_LETTER),
        watches=RUN_EVENTS,
    ),
    Role(
        "planner",
        accepts=("DiagnosisRequested",),
        emits=("PlanProduced", AGENT_STEP, DEAD_LETTER),
        model=True,
        wiring="services.planner.wiring:build",
    ),
    Role(
        "executor",
        accepts=("PlanProduced", "RetryRequested"),
        emits=("ToolInvoked", "EvidenceProduced", AGENT_STEP, DEAD_LETTER),
        model=True,
        wiring="services.executor.wiring:build",
    ),
    Role(
        "gatekeeper",
        accepts=("EvidenceProduced",),
        emits=("GatekeeperResult", DEAD_LETTER),
        wiring="services.gatekeeper.wiring:build",
    ),
    Role(
        "verifier",
        accepts=("GatekeeperResult",),
        emits=("Verdict", "RetryRequested", AGENT_STEP, DEAD_LETTER),
        model=True,
        wiring="services.verifier.wiring:build",
    ),
    Role(
        "composer",
        accepts=("Verdict",),
        emits=("Answer", AGENT_STEP, DEAD_LETTER),
        model=True,
        wiring="services.composer.wiring:build",
    ),
    Role("sentinel", emits=("Verdict",), watches=WATCHED_EVENTS),
    Role(
        "projections",
        accepts=tuple(dict.fromkeys(e for m in READ_MODELS for e in m.events)),
    ),
)
ROLE_BY_NAME: dict[str, Role] = {r.name: r for r in ROLES}
# The roles the role kit builds from their wiring, in start order.
PIPELINE_ROLES: tuple[str, ...] = tuple(r.name for r in ROLES if r.wiring)
# The roles that call a model: each chooses between its ``rules`` and ``llm``
# implementations with ``TRACEBOUND_<ROLE>_MODE``.
MODEL_ROLES: tuple[str, ...] = tuple(r.name for r in ROLES if r.model)

# What ``replay --stage`` reads: a role's inputs and outputs, or for the whole
# pipeline the requests, the recorded plans (the calls the executor runs), the
# recorded tool results it replays the tools from, and the evidence and answers it
# compares against.
PIPELINE_REPLAY_EVENTS: tuple[str, ...] = (
    "DiagnosisRequested",
    "PlanProduced",
    "ToolInvoked",
    "EvidenceProduced",
    "Answer",
)
REPLAY_TOPICS: dict[str, tuple[str, ...]] = {
    "gatekeeper": ROLE_BY_NAME["gatekeeper"].stage_topics,
    "verifier": ROLE_BY_NAME["verifier"].stage_topics,
    "pipeline": topics_of(PIPELINE_REPLAY_EVENTS),
}
# What ``replay --export`` writes out: every stage event (model calls are left out).
EXPORT_TOPICS: tuple[str, ...] = topics_of(STAGE_EVENTS)


def role(name: str) -> Role:
    """The role called ``name``; a name not in :data:`ROLES` is a programming error."""
    return ROLE_BY_NAME[name]
