"""The trace of a run, read back from the read models: the replay questions of the contract.

A trace answers, for one run: which claims the executor made; which
``source_invocation_id`` + ``raw_path`` + ``evidence_excerpt`` each cites, next to
the ref text the tool invocation *recorded* for that path; whether the gatekeeper
passed, failed or back-filled each binding; how the verifier judged each claim;
what the composer said; and when each stage happened.

Everything comes from the three projected tables (no topic is read), so a trace
is only as fresh as the projection. The reads are parameterised SQL; the
assembly (:func:`assemble_trace`, claims in :mod:`projections.trace_claims`) is a
pure function of the rows so it can be tested without a database. It returns a
:class:`~projections.views.Trace`, whose values are JSON-native (timestamps are
ISO 8601 strings), so the HTTP API and ``tracebound trace --json`` print the very
same document.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import psycopg
from psycopg.rows import dict_row

from projections.row_values import as_dict, as_list, epoch_ms, jsonable
from projections.trace_claims import claims, gate_notes, note
from projections.views import TRACE_VERSION, Trace
from tracebound.budget_note import budget_of
from tracebound.events import ToolBackend
from tracebound.events.step_kinds import is_repair_input

Connection = psycopg.Connection[Any]
Row = Mapping[str, Any]

# The stages of a run in pipeline order, with the names a person reads.
STAGES: tuple[tuple[str, str], ...] = (
    ("request", "request"),
    ("plan", "plan"),
    ("retry", "retry"),
    ("tools", "tool calls"),
    ("evidence", "evidence"),
    ("gatekeeper", "gatekeeper"),
    ("verdict", "verifier"),
    ("answer", "answer"),
)
TOKEN_STEP_KEYS = (
    "agent_name",
    "step_index",
    "model",
    "token_count",
    "prompt_tokens",
    "completion_tokens",
)


def build_trace(conn: Connection, run_id: str) -> Trace | None:
    """The trace of ``run_id``, or None when the read model has no such run.

    The three reads share one snapshot when the connection is idle, so a trace
    never mixes a run row with tool invocations projected after it.
    """
    idle = conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    with conn.transaction(), conn.cursor(row_factory=dict_row) as cur:
        if idle:
            cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        cur.execute("SELECT * FROM diagnosis_run WHERE run_id = %s", (run_id,))
        run = cur.fetchone()
        if run is None:
            return None
        cur.execute(
            "SELECT * FROM tool_invocation WHERE run_id = %s ORDER BY round, created_at, id",
            (run_id,),
        )
        invocations = cur.fetchall()
        cur.execute(
            "SELECT * FROM agent_step WHERE run_id = %s"
            " ORDER BY created_at, agent_name, step_index, event_id",
            (run_id,),
        )
        steps = cur.fetchall()
    return assemble_trace(run, invocations, steps)


def _timeline(run: Row) -> list[dict[str, Any]]:
    timings = as_dict(run.get("timings"))
    start = epoch_ms(as_dict(timings.get("request")).get("first")) or epoch_ms(
        run.get("requested_at")
    )
    stages: list[dict[str, Any]] = []
    previous_last: int | None = start
    for key, label in STAGES:
        span = as_dict(timings.get(key))
        first, last = epoch_ms(span.get("first")), epoch_ms(span.get("last"))
        if first is None or last is None:
            continue
        stages.append(
            {
                "stage": key,
                "label": label,
                "first": span.get("first"),
                "last": span.get("last"),
                "at_ms": None if start is None else first - start,
                "span_ms": last - first,
                "since_previous_ms": None
                if previous_last is None
                else max(0, first - previous_last),
            }
        )
        previous_last = max(previous_last or last, last)
    return stages


def backend_label(value: Any) -> str | None:
    """``prometheus (http://prom:9090)`` from the stored backend; None if not recorded."""
    if not isinstance(value, Mapping) or not value.get("name"):
        return None
    return ToolBackend(name=str(value["name"]), url=str(value.get("url") or "")).label()


def _invocation(inv: Row, start: int | None) -> dict[str, Any]:
    details = as_dict(inv.get("retrieval_details"))
    at = epoch_ms(inv.get("created_at"))
    return {
        "source_invocation_id": inv["id"],
        "round": inv.get("round"),
        "tool_name": inv.get("tool_name"),
        "input_params": jsonable(inv.get("input_params")),
        "success": inv.get("success"),
        "error_message": inv.get("error_message"),
        "duration_ms": inv.get("duration_ms"),
        "created_at": jsonable(inv.get("created_at")),
        "at_ms": None if start is None or at is None else at - start,
        "output_preview": inv.get("output_preview"),
        "retrieval_layer": inv.get("retrieval_layer"),
        "backend": backend_label(inv.get("backend")),
        "evidence_status": details.get("evidence_status"),
        "evidence_refs": jsonable(as_list(details.get("evidence_refs"))),
    }


def _step(step: Row) -> dict[str, Any]:
    keep = (
        "agent_name",
        "step_index",
        "model",
        "prompt_version",
        "has_tool_call",
        "duration_ms",
        "token_count",
        "prompt_tokens",
        "completion_tokens",
        "success",
        "error_message",
        "finish_reason",
        "created_at",
        "event_id",
    )
    row: dict[str, Any] = jsonable({k: step.get(k) for k in keep})
    row["repair"] = is_repair_input(step.get("model_input"))
    row["budget"] = budget_of(step.get("model_input"))  # what was cut to fit the window
    return row


def assemble_trace(run: Row, invocations: Sequence[Row], steps: Sequence[Row]) -> Trace:
    """The trace document from a ``diagnosis_run`` row and the run's invocation and step rows."""
    self_evaluation = as_dict(run.get("self_evaluation"))
    evaluation = as_dict(self_evaluation.get("verifier_evaluation"))
    gate = as_dict(evaluation.get("gatekeeper_result"))
    composer = as_dict(evaluation.get("composer_output")) or as_dict(run.get("final_answer"))
    output = as_dict(evaluation.get("executor_structured_output"))
    timeline = _timeline(run)
    start = epoch_ms(timeline[0]["first"]) if timeline else epoch_ms(run.get("requested_at"))
    guard = as_dict(composer.get("guard"))
    keep = ("run_id", "session_id", "mode", "query", "language", "requested_by", "requested_at")
    summary = {k: run.get(k) for k in keep} | {
        "status": run.get("status"),
        "round": run.get("round"),
        "selected_skill": run.get("selected_skill"),
        "narrow_scope": run.get("narrow_scope"),
        "verdict": run.get("verdict"),
        "final_status": run.get("final_status"),
        "latency_ms": run.get("latency_ms"),
        "request": run.get("request"),
        # The run's distributed trace, when the ingest traced it (see tracebound.tracing).
        "trace_id": as_dict(run.get("request")).get("trace_id"),
        "plan": run.get("plan"),
        "updated_at": run.get("updated_at"),
        "resolved_at": run.get("resolved_at"),
        "resolved_alerts": run.get("resolved_alerts"),
        "fallbacks": as_list(evaluation.get("fallbacks")),
    }
    trace = {
        "trace_version": TRACE_VERSION,
        "run": summary,
        "timeline": timeline,
        "tokens": {
            "total": {
                "token_count": run.get("token_count"),
                "prompt_tokens": run.get("prompt_tokens"),
                "completion_tokens": run.get("completion_tokens"),
            },
            "steps": [{k: s.get(k) for k in TOKEN_STEP_KEYS} for s in steps],
        },
        "executor": {
            "round": evaluation.get("round"),
            "parse_status": evaluation.get("executor_output_parse_status") or {},
            "answer_version": output.get("answer_version"),
            "hypotheses": as_list(output.get("hypotheses")),
            "missing_info": as_list(output.get("missing_info")),
        },
        "claims": claims(run, evaluation, invocations),
        "gatekeeper": None
        if not gate
        else {
            "status": gate.get("status"),
            "severity": gate.get("severity"),
            "rule_set_version": gate.get("rule_set_version"),
            "failed_rules": as_list(gate.get("failed_rules")),
            "warnings": [note(n) | {"claim_id": n.get("claim_id")} for n in gate_notes(gate)],
            "errors": [
                note(n) | {"claim_id": n.get("claim_id"), "binding_index": n.get("binding_index")}
                for n in map(as_dict, as_list(gate.get("errors")))
            ],
        },
        "verifier": None
        if not evaluation.get("verdict") and not evaluation.get("claim_checks")
        else {
            "verdict": evaluation.get("verdict"),
            "groundedness_score": evaluation.get("groundedness_score"),
            "critical_fact_count": evaluation.get("critical_fact_count"),
            "rationale": evaluation.get("rationale"),
            "mode": evaluation.get("verifier_mode"),
            "round": evaluation.get("round"),
            "traceability_version": evaluation.get("traceability_version"),
        },
        "answer": None
        if not composer
        else {
            "verdict": run.get("verdict"),
            "final_status": run.get("final_status"),
            "answer_summary": composer.get("answer_summary"),
            "user_facing_answer": composer.get("user_facing_answer"),
            "recommended_actions": as_list(composer.get("recommended_actions")),
            "guard": {
                "ok": guard.get("ok"),
                "violations": as_list(guard.get("violations")),
                "replaced": guard.get("replaced"),
            },
        },
        "tool_invocations": [_invocation(inv, start) for inv in invocations],
        "agent_steps": [_step(s) for s in steps],
        "prompt_audit": evaluation.get("prompt_audit"),
        "aiops_rule_evaluation": self_evaluation.get("aiops_rule_evaluation"),
    }
    return Trace.model_validate(jsonable(trace))
