"""The trace of a run, read back from the read models: the replay questions of the contract.

A trace answers, for one run: which claims the executor made; which
``source_invocation_id`` + ``raw_path`` + ``evidence_excerpt`` each cites, next to
the ref text the tool invocation *recorded* for that path; whether the gatekeeper
passed, failed or back-filled each binding; how the verifier judged each claim;
what the composer said; and when each stage happened.

Everything comes from the three projected tables (no topic is read), so a trace
is only as fresh as the projection. The reads are parameterised SQL; the
assembly (:func:`assemble_trace`) is a pure function of the rows so it can be
tested without a database. Every value in a trace is JSON-native (timestamps are
ISO 8601 strings), so the HTTP API and ``tracebound trace --json`` print the very
same document.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

import psycopg
from psycopg.rows import dict_row

Connection = psycopg.Connection[Any]
Row = Mapping[str, Any]

TRACE_VERSION = "v1"
STATUSES = ("requested", "planned", "executing", "gated", "verifying", "retrying", "answered")
VERDICTS = ("PASS", "LOW_CONFID", "REJECT")
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
# Gatekeeper outcomes of one binding, worst first: a claim shows its worst binding.
GATE_RANK = {"fail": 3, "backfilled": 2, "skipped": 1, "pass": 0}
TOKEN_STEP_KEYS = (
    "agent_name",
    "step_index",
    "model",
    "token_count",
    "prompt_tokens",
    "completion_tokens",
)


def jsonable(value: Any) -> Any:
    """``value`` with timestamps as ISO strings, so a trace survives ``json.dumps`` unchanged."""
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value.astimezone(UTC).isoformat(timespec="milliseconds")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return value


def build_trace(conn: Connection, run_id: str) -> dict[str, Any] | None:
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


# --------------------------------------------------------------------------- assembly


def _dict(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else []


def _ms(moment: Any) -> int | None:
    if isinstance(moment, str):
        try:
            moment = datetime.fromisoformat(moment)
        except ValueError:
            return None
    if not isinstance(moment, datetime):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def _recorded_refs(invocations: Sequence[Row]) -> dict[tuple[int, str], str]:
    refs: dict[tuple[int, str], str] = {}
    for inv in invocations:
        for ref in map(_dict, _list(_dict(inv.get("retrieval_details")).get("evidence_refs"))):
            if isinstance(ref.get("raw_path"), str):
                refs[(int(inv["id"]), ref["raw_path"])] = str(ref.get("text", ""))
    return refs


def _by_binding(notes: Any) -> dict[tuple[Any, Any], list[dict[str, Any]]]:
    grouped: dict[tuple[Any, Any], list[dict[str, Any]]] = {}
    for note in map(_dict, _list(notes)):
        grouped.setdefault((note.get("claim_id"), note.get("binding_index")), []).append(note)
    return grouped


def _executor_original(run: Row) -> dict[str, Any]:
    """The executor's own structured output (before any gatekeeper back-fill), if kept.

    The run row carries the gatekeeper's copy, into which back-filled ids and paths
    are written; the merge state still holds the executor's evidence event, which
    shows what the executor itself cited.
    """
    state = _dict(run.get("merge_state"))
    evidence = _dict(_dict(state.get("evidence")).get("value"))
    return _dict(evidence.get("executor_structured_output"))


def _note(note: Mapping[str, Any]) -> dict[str, Any]:
    keep = ("rule", "severity", "message", "source_invocation_id", "raw_path", "hint")
    return {k: note[k] for k in keep if note.get(k) is not None}


@dataclass(frozen=True, slots=True)
class _Outcomes:
    """What the gatekeeper and the tool invocations say, keyed for lookup per binding."""

    checked: Mapping[tuple[Any, Any], Mapping[str, Any]]
    warnings: Mapping[tuple[Any, Any], list[dict[str, Any]]]
    errors: Mapping[tuple[Any, Any], list[dict[str, Any]]]
    refs: Mapping[tuple[int, str], str]
    invocation_ids: set[int]


def _binding(
    outcomes: _Outcomes, claim_id: str, index: int, binding: Any, original: Any
) -> dict[str, Any]:
    checked, warnings, errors = outcomes.checked, outcomes.warnings, outcomes.errors
    refs, invocation_ids = outcomes.refs, outcomes.invocation_ids
    fields = _dict(binding)
    check = _dict(checked.get((claim_id, index)))
    sid = fields.get("source_invocation_id")
    path = fields.get("raw_path")
    if sid is None and isinstance(check.get("source_invocation_id"), int):
        sid = check["source_invocation_id"]
    if path is None and isinstance(check.get("raw_path"), str):
        path = check["raw_path"]
    recorded: str | None = None
    if type(sid) is not int or not isinstance(path, str):
        ref_status = "unbound"
    elif sid not in invocation_ids:
        ref_status = "no_invocation"
    elif (sid, path) not in refs:
        ref_status = "no_ref"
    else:
        ref_status, recorded = "found", refs[(sid, path)]
    out: dict[str, Any] = {
        "binding_index": index,
        "tool_name": fields.get("tool_name"),
        "source_invocation_id": sid,
        "raw_path": path,
        "evidence_excerpt": fields.get("evidence_excerpt"),
        "recorded_ref_text": recorded,
        "recorded_ref_status": ref_status,
        "gatekeeper": {
            "status": check.get("status", "unchecked") if check else "unchecked",
            "rule": check.get("rule"),
            "reason": check.get("reason"),
            "matched_text": check.get("matched_text"),
            "warnings": [_note(n) for n in warnings.get((claim_id, index), [])],
            "errors": [_note(n) for n in errors.get((claim_id, index), [])],
        },
    }
    if not isinstance(binding, Mapping):
        out["malformed"] = jsonable(binding)
    said = _dict(original)
    if said and (
        said.get("source_invocation_id") != sid or said.get("raw_path") != path
    ):  # the gatekeeper back-filled (or rewrote) what the executor cited
        out["executor_cited"] = {
            "source_invocation_id": said.get("source_invocation_id"),
            "raw_path": said.get("raw_path"),
        }
    return out


def _claims(run: Row, evaluation: Mapping[str, Any], invocations: Sequence[Row]) -> list[Any]:
    output = _dict(evaluation.get("executor_structured_output"))
    gate = _dict(evaluation.get("gatekeeper_result"))
    errors = _by_binding(gate.get("errors"))
    outcomes = _Outcomes(
        checked={
            (c.get("claim_id"), c.get("binding_index", 0)): c
            for c in map(_dict, _list(gate.get("checked_bindings")))
        },
        warnings=_by_binding(gate.get("warnings")),
        errors=errors,
        refs=_recorded_refs(invocations),
        invocation_ids={int(inv["id"]) for inv in invocations},
    )
    checks = {c.get("claim_id"): c for c in map(_dict, _list(evaluation.get("claim_checks")))}
    facts: dict[Any, list[dict[str, Any]]] = {}
    for fact in map(_dict, _list(evaluation.get("facts_checked"))):
        facts.setdefault(fact.get("claim_id"), []).append(
            {"kind": fact.get("kind"), "fact": fact.get("fact"), "found": fact.get("found")}
        )
    original_claims = _list(_executor_original(run).get("claims"))
    claims: list[dict[str, Any]] = []
    for c_index, raw in enumerate(_list(output.get("claims"))):
        claim = _dict(raw)
        claim_id = str(claim.get("claim_id") or f"#{c_index}")
        said = _dict(original_claims[c_index]) if c_index < len(original_claims) else {}
        said_bindings = _list(said.get("evidence_bindings"))
        bindings = [
            _binding(
                outcomes,
                claim_id,
                b_index,
                b,
                said_bindings[b_index] if b_index < len(said_bindings) else None,
            )
            for b_index, b in enumerate(_list(claim.get("evidence_bindings")))
        ]
        claims.append(_claim(claim_id, claim, bindings, checks=checks, facts=facts, errors=errors))
    listed = {c["claim_id"] for c in claims}
    for judged, check in checks.items():  # judged but absent from the structured output
        if judged not in listed:
            claims.append(_claim(str(judged), check, [], checks=checks, facts=facts, errors=errors))
    return claims


def _claim(
    claim_id: str,
    claim: Mapping[str, Any],
    bindings: list[dict[str, Any]],
    *,
    checks: Mapping[Any, Mapping[str, Any]],
    facts: Mapping[Any, list[dict[str, Any]]],
    errors: Mapping[tuple[Any, Any], list[dict[str, Any]]],
) -> dict[str, Any]:
    check = checks.get(claim_id)
    worst = max(
        (b["gatekeeper"]["status"] for b in bindings),
        key=lambda s: GATE_RANK.get(s, -1),
        default="unchecked",
    )
    claim_errors = [_note(n) for n in errors.get((claim_id, None), [])]
    if claim_errors:
        worst = "fail"
    return {
        "claim_id": claim_id,
        "claim_type": claim.get("claim_type"),
        "claim_text": claim.get("claim_text"),
        "support_level": claim.get("support_level"),
        "bindings": bindings,
        "gatekeeper": {"status": worst, "errors": claim_errors},
        "verifier": None
        if check is None
        else {
            "status": check.get("status"),
            "reason": check.get("reason"),
            "raw_paths": _list(check.get("raw_paths")),
            "facts": facts.get(claim_id, []),
        },
    }


def _timeline(run: Row) -> list[dict[str, Any]]:
    timings = _dict(run.get("timings"))
    start = _ms(_dict(timings.get("request")).get("first")) or _ms(run.get("requested_at"))
    stages: list[dict[str, Any]] = []
    previous_last: int | None = start
    for key, label in STAGES:
        span = _dict(timings.get(key))
        first, last = _ms(span.get("first")), _ms(span.get("last"))
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


def _invocation(inv: Row, start: int | None) -> dict[str, Any]:
    details = _dict(inv.get("retrieval_details"))
    at = _ms(inv.get("created_at"))
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
        "evidence_status": details.get("evidence_status"),
        "evidence_refs": jsonable(_list(details.get("evidence_refs"))),
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
        "created_at",
        "event_id",
    )
    row: dict[str, Any] = jsonable({k: step.get(k) for k in keep})
    return row


def assemble_trace(run: Row, invocations: Sequence[Row], steps: Sequence[Row]) -> dict[str, Any]:
    """The trace document from a ``diagnosis_run`` row and the run's invocation and step rows."""
    self_evaluation = _dict(run.get("self_evaluation"))
    evaluation = _dict(self_evaluation.get("verifier_evaluation"))
    gate = _dict(evaluation.get("gatekeeper_result"))
    composer = _dict(evaluation.get("composer_output")) or _dict(run.get("final_answer"))
    output = _dict(evaluation.get("executor_structured_output"))
    timeline = _timeline(run)
    start = _ms(timeline[0]["first"]) if timeline else _ms(run.get("requested_at"))
    guard = _dict(composer.get("guard"))
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
        "plan": run.get("plan"),
        "updated_at": run.get("updated_at"),
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
            "hypotheses": _list(output.get("hypotheses")),
            "missing_info": _list(output.get("missing_info")),
        },
        "claims": _claims(run, evaluation, invocations),
        "gatekeeper": None
        if not gate
        else {
            "status": gate.get("status"),
            "severity": gate.get("severity"),
            "rule_set_version": gate.get("rule_set_version"),
            "failed_rules": _list(gate.get("failed_rules")),
            "warnings": [_note(n) | {"claim_id": n.get("claim_id")} for n in gate_notes(gate)],
            "errors": [
                _note(n) | {"claim_id": n.get("claim_id"), "binding_index": n.get("binding_index")}
                for n in map(_dict, _list(gate.get("errors")))
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
            "recommended_actions": _list(composer.get("recommended_actions")),
            "guard": {
                "ok": guard.get("ok"),
                "violations": _list(guard.get("violations")),
                "replaced": guard.get("replaced"),
            },
        },
        "tool_invocations": [_invocation(inv, start) for inv in invocations],
        "agent_steps": [_step(s) for s in steps],
        "prompt_audit": evaluation.get("prompt_audit"),
        "aiops_rule_evaluation": self_evaluation.get("aiops_rule_evaluation"),
    }
    result: dict[str, Any] = jsonable(trace)
    return result


def gate_notes(gate: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The gatekeeper's warnings (back-fills among them) as dicts."""
    return [_dict(n) for n in _list(gate.get("warnings"))]
