"""The executor runs the calls a plan records, not what today's skill files would plan."""

from __future__ import annotations

import io
from typing import Any

import pytest
from fastavro import schemaless_writer
from pydantic import BaseModel

from services.executor.handler import ExecutorHandler
from services.executor.tools import PARAMS_MODELS
from services.executor.tools.base import RunContext, ToolOutcome
from services.planner.handler import PlannerHandler
from services.planner.planning import described_calls
from services.planner.skills import load_skills
from tests.support.plans import edited_skills
from tracebound.client import new_request
from tracebound.codec import SingleObjectCodec, schemas
from tracebound.events import (
    EvidenceProduced,
    EvidenceRef,
    PlannedCall,
    PlanProduced,
    RetrievalDetails,
    RetryContext,
    RetryRequested,
    ToolBackend,
)

MEMORY_Q = "Why is order-service using so much memory? Please analyse it."


class NoEvidence:
    """A tool double with the real tool's parameter model that never finds anything."""

    description = "test double"
    backend = ToolBackend(name="demo")

    def __init__(self, name: str, params_model: type[BaseModel]) -> None:
        self.name, self.params_model = name, params_model

    def run(self, params: BaseModel, ctx: RunContext) -> ToolOutcome:
        ref = EvidenceRef(raw_path="$.no_evidence", text=f"{self.name} returned no evidence")
        details = RetrievalDetails(evidence_status="no_evidence", evidence_refs=(ref,))
        return ToolOutcome({"items": []}, details, True)


def _tools() -> dict[str, Any]:
    return {name: NoEvidence(name, model) for name, model in PARAMS_MODELS.items()}


def _plan() -> PlanProduced:
    out = PlannerHandler(load_skills())(new_request(MEMORY_Q))
    [plan] = [e for e in out if isinstance(e, PlanProduced)]
    return plan


def _ran(executor: ExecutorHandler, event: PlanProduced | RetryRequested) -> list[Any]:
    [evidence] = [e for e in executor(event) if isinstance(e, EvidenceProduced)]
    return [(inv.tool_name, inv.input_params) for inv in evidence.tool_trace]


def _as_run(calls: tuple[PlannedCall, ...]) -> list[Any]:
    """The calls as the trace records them: parameters completed by the tool's model."""
    return [
        (c.tool, PARAMS_MODELS[c.tool].model_validate(c.params).model_dump(mode="json"))
        for c in calls
    ]


def test_the_planner_records_the_calls_its_plan_describes() -> None:
    plan = _plan().plan
    assert plan.execution is not None
    assert plan.planner_plan.selected_skill == "diagnose-high-memory"
    assert len(plan.execution.calls) == len(plan.planner_plan.plan) > 1
    for call, line in zip(plan.execution.calls, plan.planner_plan.plan, strict=True):
        assert line.startswith(f"{call.tool} ") and line.endswith(f": {call.purpose}")
    assert plan.execution.services == ("order-service",)


def test_executor_runs_the_recorded_calls_after_the_skills_changed() -> None:
    plan = _plan()
    assert plan.plan.execution is not None
    executor = ExecutorHandler(_tools(), edited_skills(load_skills()))
    assert _ran(executor, plan) == _as_run(plan.plan.execution.calls)
    [evidence] = [e for e in executor(plan) if isinstance(e, EvidenceProduced)]
    skill_refs = [p for p in evidence.prompt_audit.prompts if p.name == "diagnose-high-memory"]
    assert [p.version for p in skill_refs] == [plan.plan.skill_version]


def test_a_retry_runs_the_calls_of_the_plan_it_carries() -> None:
    plan = _plan()
    assert plan.plan.execution is not None
    retry = plan.reply(
        RetryRequested,
        "verifier",
        retry_context=RetryContext(round=2, reasons=("more evidence",)),
        plan=plan.plan,
        request=plan.request,
    )
    executor = ExecutorHandler(_tools(), edited_skills(load_skills()))
    assert _ran(executor, retry) == _as_run(plan.plan.execution.calls)


def _legacy(plan: PlanProduced, **changes: Any) -> PlanProduced:
    """The plan as recorded before plans carried their calls."""
    snapshot = plan.plan.model_copy(update={"execution": None, **changes})
    return plan.model_copy(update={"plan": snapshot})


def test_a_legacy_rules_plan_runs_the_calls_its_lines_name() -> None:
    plan = _plan()
    assert plan.plan.execution is not None
    legacy = _legacy(plan)
    executor = ExecutorHandler(_tools(), edited_skills(load_skills()))
    assert _ran(executor, legacy) == _as_run(plan.plan.execution.calls)
    assert described_calls(legacy.plan) == plan.plan.execution.calls


def test_a_legacy_model_plan_is_derived_from_todays_skills() -> None:
    plan = _plan()
    assert plan.plan.execution is not None
    model_lines = plan.plan.planner_plan.model_copy(update={"plan": ("check the memory alert",)})
    legacy = _legacy(plan, planner_mode="llm", planner_plan=model_lines)
    assert described_calls(legacy.plan) is None
    # The same skill files give the same calls as the planner recorded ...
    same = _ran(ExecutorHandler(_tools(), load_skills()), legacy)
    assert same == _as_run(plan.plan.execution.calls)
    # ... and edited ones the edited calls: the documented limit of such old plans.
    edited = _ran(ExecutorHandler(_tools(), edited_skills(load_skills())), legacy)
    assert ("lookup_knowledge", {"query": "edited step", "alert_name": None, "top_k": 3}) in edited
    assert edited != same


@pytest.mark.parametrize(
    "line",
    [
        "check the memory alert",
        'query_traces {"q": "up"}: not a tool',
        'query_logs {"query": "x"} without purpose',
        'query_logs ["x"]: not an object',
    ],
)
def test_lines_that_are_not_calls_are_not_read_as_calls(line: str) -> None:
    plan = _plan().plan
    rules_lines = plan.planner_plan.model_copy(update={"plan": (*plan.planner_plan.plan, line)})
    assert described_calls(plan.model_copy(update={"planner_plan": rules_lines})) is None


def test_a_plan_written_before_plans_carried_calls_decodes_without_them() -> None:
    plan = _plan()
    [v1, *_newer] = schemas.history("PlanProduced")
    buf = io.BytesIO()
    buf.write(b"\xc3\x01" + v1.fingerprint)
    schemaless_writer(buf, v1.parsed, plan.to_avro())
    decoded = SingleObjectCodec().decode(buf.getvalue())
    assert isinstance(decoded, PlanProduced)
    assert decoded.plan.execution is None
    assert decoded.plan.planner_plan == plan.plan.planner_plan
    assert described_calls(decoded.plan) == plan.plan.execution.calls  # type: ignore[union-attr]
