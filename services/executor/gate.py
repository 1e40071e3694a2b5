"""The tool gate: every tool call of a round passes through here, whoever asked.

It enforces in code what a prompt can only ask for (the harness limits and
narrow-task rules of docs/contracts.md): parameter schema validation, a
per-round call budget, rejection of duplicate calls (same tool, same
normalised parameters), a per-tool failure
limit, a timeout per call, and — in narrow-scope tasks — no widening of a query
after it returned ``$.no_evidence``. It also records each call as the
``tool_invocation`` the gatekeeper later checks citations against, with the
backend that answered it, and hands the tools the request's alerts and time.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from services.executor.ids import invocation_id
from services.executor.settings import ExecutorSettings
from services.executor.tools.base import EvidenceTool, RunContext, ToolOutcome
from tracebound import fastjson, tracing
from tracebound.bounds import TOOL_OUTPUT_ITEMS, bound_json, cut_text
from tracebound.errors import TransientError
from tracebound.events import DiagnosisRequest, RetrievalDetails, ToolBackend, ToolInvocation

NO_EVIDENCE = "no_evidence"


class ToolPool:
    """The threads tool calls run on, so that a call can be given up after its timeout.

    Each run in flight calls its tools one after the other, so the role's
    concurrency bounds the calls running at once: a pool smaller than that makes
    runs queue for a thread, and the wait counts as tool time. A call given up
    keeps its thread until the tool returns, so the pool holds twice as many.
    """

    def __init__(self, runs_in_flight: int = 1) -> None:
        self.workers = 2 * runs_in_flight
        self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="tool")

    def run(
        self, tool: EvidenceTool, params: BaseModel, ctx: RunContext, timeout_s: float
    ) -> ToolOutcome:
        """Run with a timeout; a tool's own exceptions other than transient ones are failures."""
        future = self._pool.submit(tool.run, params, ctx)
        try:
            return future.result(timeout_s)
        except FutureTimeout:
            return _failed(f"{tool.name} timed out after {timeout_s:g}s")
        except TransientError:
            raise
        except Exception as exc:  # a tool bug must not cost the run its answer
            return _failed(f"{tool.name} failed: {type(exc).__name__}: {exc}")


# For handlers built without a pool of their own (tests, replay): two runs at once.
SHARED_POOL = ToolPool(2)


@dataclass(frozen=True, slots=True)
class Refusal:
    """A call the gate did not run, and why (told to the model in llm mode)."""

    tool_name: str
    params: Mapping[str, Any]
    reason: str
    # The same call ran before in this round: its result is already there.
    duplicate: bool = False


def _terms(value: Any) -> set[str]:
    return set(str(value).casefold().split()) if value else set()


def _widens(tool: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """True when ``new`` asks for less specific evidence than ``old`` did."""
    if tool == "query_logs":
        old_terms = _terms(old.get("query")) | _terms(old.get("service"))
        new_terms = _terms(new.get("query")) | _terms(new.get("service"))
        return not old_terms <= new_terms or new.get("log_topic") != old.get("log_topic")
    if tool == "query_metrics":
        return any(old.get(k) and new.get(k) != old.get(k) for k in ("alert_name", "service"))
    return False


@dataclass
class ToolGate:
    """Runs the tool calls of one executor round and keeps their record."""

    tools: Mapping[str, EvidenceTool]
    settings: ExecutorSettings
    run_id: str
    round_no: int
    narrow: bool
    request: DiagnosisRequest | None = None
    pool: ToolPool = SHARED_POOL
    ctx: RunContext = field(init=False)
    invocations: list[ToolInvocation] = field(default_factory=list)
    refusals: list[Refusal] = field(default_factory=list)
    _seen: set[str] = field(default_factory=set)
    _failures: dict[str, int] = field(default_factory=dict)
    _no_evidence: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.ctx = RunContext(run_id=self.run_id)
        if self.request is not None:
            self.ctx.alerts = self.request.alerts
            self.ctx.requested_at = self.request.requested_at

    def call(self, tool_name: str, raw_params: Mapping[str, Any]) -> ToolInvocation | Refusal:
        tool = self.tools.get(tool_name)
        if tool is None:
            return self._refuse(tool_name, raw_params, f"unknown tool {tool_name!r}")
        spent = self._spent(tool_name)
        if spent is not None:
            return self._refuse(tool_name, raw_params, spent)
        try:
            params = tool.params_model.model_validate(dict(raw_params))
        except ValidationError as exc:
            reason = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            failed = _failed(f"invalid parameters: {reason}")
            return self._record(tool_name, dict(raw_params), failed, 0)
        canonical = params.model_dump(mode="json")
        key = tool_name + fastjson.dumps(canonical).casefold()
        repeated = self._repeated(tool_name, key, canonical)
        if repeated is not None:
            return self._refuse(tool_name, canonical, repeated, duplicate=key in self._seen)
        self._seen.add(key)
        started = time.perf_counter()
        with tracing.span("tool call", self._span_attributes(tool)) as span:
            outcome = self.pool.run(tool, params, self.ctx, self.settings.tool_timeout_s)
            span.set(_outcome_attributes(outcome))
        elapsed_ms = int((time.perf_counter() - started) * 1000)
        return self._record(tool_name, canonical, outcome, elapsed_ms)

    def _spent(self, tool_name: str) -> str | None:
        """Why no call may be made now: the round's budget or this tool's failures."""
        if len(self.invocations) >= self.settings.max_calls_per_round:
            return f"tool-call budget of {self.settings.max_calls_per_round} is spent"
        if self._failures.get(tool_name, 0) >= self.settings.max_failures_per_tool:
            return f"{tool_name} failed too often this round"
        return None

    def _repeated(self, tool_name: str, key: str, canonical: dict[str, Any]) -> str | None:
        """Why these parameters may not run: asked before, or a widened empty query."""
        if key in self._seen:
            return "duplicate call (same tool and parameters)"
        if self.narrow and any(
            t == tool_name and _widens(tool_name, old, canonical) for t, old in self._no_evidence
        ):
            return "narrow-scope task: a query that found no evidence may not be widened"
        return None

    def _span_attributes(self, tool: EvidenceTool) -> tracing.Attributes:
        return {
            "tracebound.role": "executor",
            "tracebound.run_id": self.run_id,
            "tracebound.round": self.round_no,
            "tracebound.tool": tool.name,
            "tracebound.backend": tool.backend.name,
        }

    def _record(
        self, tool_name: str, params: dict[str, Any], outcome: ToolOutcome, duration_ms: int
    ) -> ToolInvocation:
        if not outcome.success:
            self._failures[tool_name] = self._failures.get(tool_name, 0) + 1
        if outcome.retrieval_details.evidence_status == NO_EVIDENCE:
            self._no_evidence.append((tool_name, params))
        details = outcome.retrieval_details
        invocation = ToolInvocation(
            source_invocation_id=invocation_id(self.run_id, self.round_no, len(self.invocations)),
            tool_name=tool_name,
            input_params=bound_json(params),
            output=bound_json(outcome.output),
            output_preview=outcome.output_preview,
            retrieval_layer=outcome.retrieval_layer,
            l0_match_count=outcome.l0_match_count,
            l1_match_count=outcome.l1_match_count,
            retrieval_details=details.model_copy(
                update={
                    "evidence_refs": tuple(
                        ref.model_copy(update={"text": cut_text(ref.text)})
                        for ref in details.evidence_refs[:TOOL_OUTPUT_ITEMS]
                    )
                }
            ),
            duration_ms=duration_ms,
            success=outcome.success,
            error_message=outcome.error_message,
            round=self.round_no,
            backend=outcome.backend or self._backend(tool_name),
        )
        self.invocations.append(invocation)
        return invocation

    def _backend(self, tool_name: str) -> ToolBackend | None:
        tool = self.tools.get(tool_name)
        return tool.backend if tool is not None else None

    def _refuse(
        self, tool_name: str, params: Mapping[str, Any], reason: str, *, duplicate: bool = False
    ) -> Refusal:
        refusal = Refusal(tool_name, dict(params), reason, duplicate)
        self.refusals.append(refusal)
        return refusal


def _outcome_attributes(outcome: ToolOutcome) -> tracing.Attributes:
    attributes: dict[str, str | int | bool] = {
        "tracebound.success": outcome.success,
        "tracebound.evidence_status": outcome.retrieval_details.evidence_status,
    }
    if outcome.backend is not None:
        attributes["tracebound.backend"] = outcome.backend.name
    return attributes


def _failed(message: str) -> ToolOutcome:
    return ToolOutcome(
        output={"success": False, "message": message},
        retrieval_details=RetrievalDetails(evidence_status="failed"),
        success=False,
        error_message=message,
        output_preview=message[:300],
    )
