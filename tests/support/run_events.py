"""Many runs as the pipeline records them: real event models, written by the real projection.

Each run is the events its stages would emit (request, plan, model step, tool
call, gatekeeper result, verdict, answer — or fewer for a run still in flight),
built from fully populated samples with the fields a dashboard shows set on
purpose. :func:`project` applies them through each read model's own ``write``,
exactly what a projection worker does with a batch it consumed.
"""

from __future__ import annotations

import random
import zlib
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from projections.models import MODELS
from projections.store import Connection
from tests.support.samples import sample
from tracebound.events import (
    AgentStep,
    Answer,
    DiagnosisRequest,
    DiagnosisRequested,
    Event,
    GatekeeperResult,
    PlanProduced,
    ToolInvoked,
    Verdict,
)
from tracebound.events.records import Alert, EvidenceRef, PlannerPlan, RetrievalDetails

VERDICT_MIX = ("PASS", "PASS", "PASS", "LOW_CONFID", "REJECT")
SKILLS = ("cpu-diagnosis", "db-pool-diagnosis", "latency-diagnosis")
SERVICES = ("payment-service", "inventory-service", "checkout-service")
MODELS_USED = ("qwen2.5-7b-instruct", "llama3.1-8b")
ALERTNAMES = ("HighCPUUsage", "HikariPoolExhausted", "HighLatencyP99")


@dataclass(frozen=True, slots=True)
class RunSpec:
    """What one generated run is: the facts a test asserts on."""

    run_id: str
    mode: str
    query: str
    service: str
    skill: str
    verdict: str | None  # None: still in flight (no verdict yet)
    fallback: bool
    log_line: str


def _stamp(cls: type[Event], run: RunSpec, at: datetime, n: int, **fields: Any) -> Event:
    base = sample(cls)
    update = {
        "run_id": run.run_id,
        "event_id": f"{run.run_id}-{n:02d}-{cls.__name__}",
        "occurred_at": at,
        "session_id": f"s-{run.run_id}",
    }
    return base.model_copy(update=update | fields)


def run_events(run: RunSpec, start: datetime, rng: random.Random) -> list[Event]:
    """The events of ``run``, requested at ``start``, its stages a few hundred ms apart."""
    alerts: tuple[Alert, ...] = ()
    if run.mode == "AIOPS":
        alert = sample(Alert)
        labels = {"alertname": ALERTNAMES[SERVICES.index(run.service)], "service": run.service}
        alerts = (alert.model_copy(update={"labels": labels}),)
    request = DiagnosisRequest(mode=run.mode, query=run.query, alerts=alerts, requested_at=start)
    plan = sample(PlanProduced).plan
    chosen = PlannerPlan(selected_skill=run.skill, selection_reason="keywords", reasoning="r")
    plan = plan.model_copy(update={"planner_plan": chosen})
    invocation = sample(ToolInvoked).tool_invocation.model_copy(
        update={
            "source_invocation_id": zlib.crc32(run.run_id.encode()),
            "tool_name": "search_logs",
            "error_message": None,
            "output": {"logs": [run.log_line]},
            "output_preview": run.log_line,
            "retrieval_details": RetrievalDetails(
                evidence_status="found",
                evidence_refs=(EvidenceRef(raw_path="$.logs[0]", text=run.log_line),),
            ),
            "round": 1,
        }
    )
    gate = sample(GatekeeperResult).gatekeeper_result.model_copy(
        update={"rule_set_version": "rules-2026.11"}
    )
    at = start
    steps: list[tuple[type[Event], dict[str, Any]]] = [
        (DiagnosisRequested, {"request": request}),
        (PlanProduced, {"request": request, "plan": plan}),
        (AgentStep, {"model": MODELS_USED[zlib.crc32(run.query.encode()) % 2], "token_count": 40}),
        (ToolInvoked, {"tool_invocation": invocation, "request": request, "plan": plan}),
        (GatekeeperResult, {"round": 1, "request": request, "gatekeeper_result": gate}),
    ]
    if run.verdict is not None:
        mode = "rules-fallback" if run.fallback else "llm"
        steps += [
            (
                Verdict,
                {"round": 1, "verdict": run.verdict, "verifier_mode": mode, "claim_checks": ()},
            ),
            (
                Answer,
                {
                    "round": 1,
                    "verdict": run.verdict,
                    "final_status": "answered" if run.verdict != "REJECT" else "degraded",
                    "latency_ms": 0,
                },
            ),
        ]
    events: list[Event] = []
    for n, (cls, fields) in enumerate(steps):
        at += timedelta(milliseconds=rng.randint(40, 900))
        if cls is Answer:
            fields = fields | {"latency_ms": int((at - start).total_seconds() * 1000)}
        if cls is Verdict:
            fields = fields | {"request": request}
        events.append(_stamp(cls, run, at, n, **fields))
    return events


def mixed_runs(count: int, newest: datetime, seed: int = 17) -> tuple[list[RunSpec], list[Event]]:
    """``count`` runs a minute apart up to ``newest``, verdicts, modes and skills mixed."""
    rng = random.Random(seed)
    specs: list[RunSpec] = []
    events: list[Event] = []
    for i in range(count):
        service = SERVICES[i % len(SERVICES)]
        mode = "AIOPS" if i % 4 == 0 else "CHAT"
        spec = RunSpec(
            run_id=f"run-{i:05d}",
            mode=mode,
            query=f"{service} health check #{i}" if mode == "CHAT" else "Diagnose firing alerts",
            service=service,
            skill=SKILLS[i % len(SKILLS)],
            verdict=None if i % 23 == 5 else VERDICT_MIX[rng.randrange(len(VERDICT_MIX))],
            fallback=i % 9 == 0,
            log_line=f"2026-12-01T10:00:00Z INFO {service} request served in {i} ms",
        )
        specs.append(spec)
        start = newest - timedelta(minutes=count - 1 - i)
        events += run_events(spec, start, rng)
    return specs, events


def project(conn: Connection, events: list[Event]) -> None:
    """Apply events the way the projection workers do: each read model writes its own."""
    with conn.transaction():
        for model in MODELS.values():
            mine = [e for e in events if e.schema_name in model.events]
            if mine:
                model.write(conn, model.name, mine)
