"""The tool gate enforces the harness limits in code, whoever asks for the call."""

from __future__ import annotations

import threading
import time
from typing import Any

from pydantic import BaseModel

from services.executor.gate import Refusal, ToolGate, ToolPool
from services.executor.ids import invocation_id
from services.executor.llm_executor import planned_turn
from services.executor.settings import ExecutorSettings
from services.executor.tool_view import ToolView
from services.executor.tools.base import RunContext, ToolOutcome, ToolParams
from tracebound.events import (
    EvidenceRef,
    PlannedCall,
    RetrievalDetails,
    ToolBackend,
    ToolInvocation,
)
from tracebound.llm import LLMSettings, PromptBudget


class LogParams(ToolParams):
    log_topic: str = "application-logs"
    query: str
    service: str | None = None


class ScriptedLogs:
    """A tool double: hits for queries containing 'order-service', nothing otherwise."""

    name = "query_logs"
    description = "test logs"
    params_model: type[BaseModel] = LogParams
    backend = ToolBackend(name="loki", url="http://loki.test:3100")

    def __init__(self, fail: bool = False, sleep_s: float = 0.0) -> None:
        self.fail, self.sleep_s, self.calls = fail, sleep_s, 0

    def run(self, params: BaseModel, ctx: RunContext) -> ToolOutcome:
        self.calls += 1
        time.sleep(self.sleep_s)
        assert isinstance(params, LogParams)
        if self.fail:
            return ToolOutcome(
                {"success": False}, RetrievalDetails(evidence_status="failed"), False, "down"
            )
        if "order-service" in params.query:
            ref = EvidenceRef(raw_path="$.logs[0]", text="order-service ERROR pool exhausted")
            return ToolOutcome(
                {"logs": [{}]},
                RetrievalDetails(evidence_status="supported", evidence_refs=(ref,)),
                True,
            )
        ref = EvidenceRef(
            raw_path="$.no_evidence", text=f"query_logs returned no evidence; query={params.query}"
        )
        return ToolOutcome(
            {"logs": []},
            RetrievalDetails(evidence_status="no_evidence", evidence_refs=(ref,)),
            True,
        )


def _gate(tool: Any, narrow: bool = False, **limits: Any) -> ToolGate:
    return ToolGate({tool.name: tool}, ExecutorSettings(**limits), "run-1", 1, narrow)


def test_invocations_are_recorded_with_deterministic_ids() -> None:
    gate = _gate(ScriptedLogs())
    first = gate.call("query_logs", {"query": "order-service HikariCP"})
    second = gate.call("query_logs", {"query": "payment-service Redis"})
    assert isinstance(first, ToolInvocation) and isinstance(second, ToolInvocation)
    assert first.source_invocation_id == invocation_id("run-1", 1, 0)
    assert second.source_invocation_id == invocation_id("run-1", 1, 1)
    assert first.input_params == {
        "log_topic": "application-logs",
        "query": "order-service HikariCP",
        "service": None,
    }


def test_duplicate_calls_are_refused_after_normalisation() -> None:
    tool = ScriptedLogs()
    gate = _gate(tool)
    gate.call("query_logs", {"query": "order-service HikariCP"})
    again = gate.call(
        "query_logs", {"query": "ORDER-service HikariCP", "log_topic": "application-logs"}
    )
    assert isinstance(again, Refusal) and "duplicate" in again.reason
    assert tool.calls == 1


def test_budget_per_round() -> None:
    gate = _gate(ScriptedLogs(), max_calls_per_round=2)
    assert isinstance(gate.call("query_logs", {"query": "a"}), ToolInvocation)
    assert isinstance(gate.call("query_logs", {"query": "b"}), ToolInvocation)
    refused = gate.call("query_logs", {"query": "c"})
    assert isinstance(refused, Refusal) and "budget" in refused.reason


def test_invalid_parameters_are_a_failed_invocation_not_a_run() -> None:
    tool = ScriptedLogs()
    gate = _gate(tool)
    result = gate.call("query_logs", {"query": "x", "drop_table": "users"})
    assert isinstance(result, ToolInvocation) and not result.success
    assert "invalid parameters" in (result.error_message or "")
    assert (
        result.retrieval_details is not None
        and result.retrieval_details.evidence_status == "failed"
    )
    assert tool.calls == 0


def test_unknown_tool_is_refused() -> None:
    assert isinstance(_gate(ScriptedLogs()).call("rm_rf", {}), Refusal)


def test_failure_limit_per_tool() -> None:
    tool = ScriptedLogs(fail=True)
    gate = _gate(tool, max_failures_per_tool=2)
    gate.call("query_logs", {"query": "a"})
    gate.call("query_logs", {"query": "b"})
    refused = gate.call("query_logs", {"query": "c"})
    assert isinstance(refused, Refusal) and "failed too often" in refused.reason
    assert tool.calls == 2


def test_timeout_becomes_a_failed_invocation() -> None:
    gate = _gate(ScriptedLogs(sleep_s=1.0), tool_timeout_s=0.1)
    result = gate.call("query_logs", {"query": "a"})
    assert isinstance(result, ToolInvocation) and not result.success
    assert "timed out" in (result.error_message or "")
    assert result.backend == ScriptedLogs.backend  # a timeout is still the backend's failure
    assert result.retrieval_details is not None
    assert result.retrieval_details.evidence_status == "failed"


def test_narrow_scope_forbids_widening_after_no_evidence() -> None:
    gate = _gate(ScriptedLogs(), narrow=True)
    first = gate.call(
        "query_logs", {"query": "inventory-service HikariCP", "service": "inventory-service"}
    )
    assert isinstance(first, ToolInvocation)
    for wider in (
        {"query": "HikariCP"},
        {"query": "inventory-service"},
        {"query": "order-service HikariCP"},
    ):
        refused = gate.call("query_logs", wider)
        assert isinstance(refused, Refusal) and "widened" in refused.reason, wider
    narrower = gate.call(
        "query_logs",
        {"query": "inventory-service HikariCP timeout", "service": "inventory-service"},
    )
    assert isinstance(narrower, ToolInvocation)


def test_broad_scope_may_query_further() -> None:
    gate = _gate(ScriptedLogs(), narrow=False)
    gate.call("query_logs", {"query": "inventory-service HikariCP"})
    assert isinstance(gate.call("query_logs", {"query": "HikariCP"}), ToolInvocation)


class MeetingTool(ScriptedLogs):
    """Succeeds only when ``parties`` calls run at the same time."""

    def __init__(self, parties: int) -> None:
        super().__init__()
        self.barrier = threading.Barrier(parties, timeout=10.0)

    def run(self, params: BaseModel, ctx: RunContext) -> ToolOutcome:
        self.barrier.wait()
        return super().run(params, ctx)


def test_a_pool_sized_for_the_runs_in_flight_runs_their_tools_at_once() -> None:
    runs = 8
    tool = MeetingTool(runs)
    pool = ToolPool(runs)
    assert pool.workers == 2 * runs  # room for as many calls given up after their timeout
    results: list[Any] = []

    def one_run(i: int) -> None:
        gate = ToolGate({tool.name: tool}, ExecutorSettings(), f"run-{i}", 1, False, pool=pool)
        results.append(gate.call("query_logs", {"query": "order-service HikariCP"}))

    threads = [threading.Thread(target=one_run, args=(i,)) for i in range(runs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == runs
    assert all(isinstance(r, ToolInvocation) and r.success for r in results)


def test_a_planned_call_the_gate_finds_a_duplicate_is_not_shown_twice() -> None:
    gate = _gate(ScriptedLogs())
    first = PlannedCall(tool="query_logs", params={"query": "order-service pool"}, purpose="look")
    again = PlannedCall(
        tool="query_logs", params={"query": "order-service pool", "service": None}, purpose="look"
    )
    other = PlannedCall(
        tool="query_logs", params={"query": "payment-service Redis"}, purpose="look"
    )
    view = ToolView(PromptBudget.from_settings(LLMSettings()))
    turn, *results = planned_turn(gate, view, [first, again, other])
    assert [c["id"] for c in turn["tool_calls"]] == ["plan-1", "plan-3"]
    assert [m["tool_call_id"] for m in results] == ["plan-1", "plan-3"]
    [refusal] = gate.refusals
    assert refusal.duplicate and len(gate.invocations) == 2
