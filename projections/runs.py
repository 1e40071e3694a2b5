"""The ``diagnosis_run`` reducer: events of one run → its merge state → its row.

A run's events come from ten topics. Each topic is keyed by ``run_id``, so the
events of a run arrive in order *within* a topic, but the relative order *across*
topics depends on how the consumer happened to interleave its fetches — and is
different after a crash, a restart or a rebuild. The reducer therefore never
relies on arrival order. The merge state is a join-semilattice:

- each *slot* (request, plan, status, evidence, gatekeeper, verdict, answer) keeps
  the value of the event with the highest rank, a total order ending in the event
  id (so ties between distinct events are decided the same way everywhere);
- stage timings keep the minimum and maximum event time;
- agent-step token counts are kept per step event id and summed when read;

so applying the same events in any order, any number of times, gives the same
state. An ``Answer`` outranks everything (the run is answered whatever arrives
later from another topic); a carried copy of the request or plan is used only
until the original event is seen.

Statuses name the stage that has the run after the event with the highest rank:
``requested`` (planner), ``planned`` (executor, no tool yet), ``executing``
(tools running), ``gated`` (evidence at the gatekeeper), ``verifying`` (at the
verifier, or judged and waiting for the composer), ``retrying`` (another round
asked for) and ``answered``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from projections import resolutions, stored_state
from projections.run_state import RunState
from tracebound.codec.documents import EventDoc, document
from tracebound.events import Event

TRACEABILITY_VERSION = "v1"
ANSWERED_ROUND = 1_000_000_000
ORIGINAL, CARRIED = 2, 1

# status slot: stage rank inside a round
STAGES: dict[str, tuple[int, str]] = {
    "DiagnosisRequested": (0, "requested"),
    "PlanProduced": (1, "planned"),
    "RetryRequested": (1, "retrying"),
    "ToolInvoked": (2, "executing"),
    "EvidenceProduced": (3, "gated"),
    "GatekeeperResult": (4, "verifying"),
    "Verdict": (5, "verifying"),
    "Answer": (9, "answered"),
}
TIMING_STAGES: dict[str, str] = {
    "DiagnosisRequested": "request",
    "PlanProduced": "plan",
    "RetryRequested": "retry",
    "ToolInvoked": "tools",
    "EvidenceProduced": "evidence",
    "GatekeeperResult": "gatekeeper",
    "Verdict": "verdict",
    "Answer": "answer",
    "AgentStep": "agent_steps",
}
_ROUND_FIELD = {"EvidenceProduced", "GatekeeperResult", "Verdict", "Answer"}


def as_doc(item: Event | EventDoc) -> EventDoc:
    """The document of ``item``: the reducers read documents; a model is turned into one."""
    return document(item) if isinstance(item, Event) else item


def moment(text: str) -> datetime:
    """An event time (ISO text in a document) as an aware time."""
    at = datetime.fromisoformat(text)
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def _ms(text: str) -> int:
    return int(moment(text).timestamp() * 1000)


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")


def _offer(state: RunState, slot: str, rank: list[Any], value: Callable[[], Any]) -> bool:
    """Keep ``value()`` in ``slot`` if its rank beats the one held (the semilattice join).

    The value is built only when it wins; returns whether the slot changed.
    """
    held = state.get(slot)
    if held is None or rank > held["rank"]:
        state[slot] = {"rank": rank, "value": value()}
        return True
    return False


def _round_of(event: EventDoc) -> int:
    name, data = event
    if name == "ToolInvoked":
        return int(data["tool_invocation"]["round"])
    if name == "RetryRequested":
        return int(data["retry_context"]["round"])
    if name == "PlanProduced":
        return 1
    if name in _ROUND_FIELD:
        return int(data["round"])
    return 0


def _carried(state: RunState, event: EventDoc) -> bool:
    changed = False
    name, data = event
    request = data.get("request")
    if request is not None:
        prio = ORIGINAL if name == "DiagnosisRequested" else CARRIED
        changed |= _offer(
            state,
            "request",
            [prio, data["event_id"]],
            lambda: _request_value(event, request),
        )
    plan = data.get("plan")
    if plan is not None:
        prio = ORIGINAL if name == "PlanProduced" else CARRIED
        changed |= _offer(state, "plan", [prio, data["event_id"]], lambda: dict(plan))
    return changed


def _request_value(event: EventDoc, request: dict[str, Any]) -> dict[str, Any]:
    """The request slot: the request, its session and (original only) its trace id."""
    name, data = event
    value = {"session_id": data.get("session_id"), **request}
    if name == "DiagnosisRequested" and data.get("trace_id") is not None:
        value["trace_id"] = data["trace_id"]
    return value


def _kept(data: dict[str, Any], keys: tuple[str, ...]) -> Callable[[], dict[str, Any]]:
    return lambda: {key: data[key] for key in keys}


GATEKEEPER_KEEP = (
    "gatekeeper_result",
    "executor_structured_output",
    "executor_output_parse_status",
    "tool_trace_summary",
    "prompt_audit",
    "round",
)
VERDICT_KEEP = (
    *stored_state.VERDICT_FIELDS,
    "round",
    "prompt_audit",
    "aiops_rule_evaluation",
    "fallbacks",
)
ANSWER_KEEP = (
    "answer_summary",
    "recommended_actions",
    "user_facing_answer",
    "guard",
    "verdict",
    "language",
    "latency_ms",
    "final_status",
    "round",
    "prompt_audit",
    "fallbacks",
)


EVIDENCE_KEEP = ("executor_structured_output", "executor_output_parse_status", "prompt_audit")
_SLOTS = {
    "EvidenceProduced": ("evidence", EVIDENCE_KEEP),
    "GatekeeperResult": ("gatekeeper", GATEKEEPER_KEEP),
    "Verdict": ("verdict", VERDICT_KEEP),
}


def _payload(state: RunState, event: EventDoc, round_no: int) -> bool:
    name, data = event
    slot = _SLOTS.get(name)
    if slot is not None:
        return _offer(state, slot[0], [round_no, data["event_id"]], _kept(data, slot[1]))
    if name == "Answer":
        return _offer(state, "answer", [data["event_id"]], _kept(data, ANSWER_KEEP))
    if name == "AgentStep":
        steps = state.setdefault("steps", {})
        counts = [data["token_count"], data["prompt_tokens"], data["completion_tokens"]]
        if steps.get(data["event_id"]) != counts:
            steps[data["event_id"]] = counts
            return True
    return False


def apply(state: RunState | None, event: Event | EventDoc) -> RunState:
    """The merge state after ``event``; ``state`` is not modified."""
    new: RunState = copy.deepcopy(state) if state is not None else {}
    merge(new, event)
    return new


def merge(new: RunState, item: Event | EventDoc) -> bool:
    """Fold an event into ``new`` in place; returns whether the state changed.

    Callers need no copy to tell a changed run from an unchanged one.
    """
    event = as_doc(item)
    name, data = event
    event_id = data["event_id"]
    changed = False
    round_no = _round_of(event)
    if round_no > int(new.get("max_round", 0)) or "max_round" not in new:
        new["max_round"] = max(int(new.get("max_round", 0)), round_no)
        changed = True
    stage = STAGES.get(name)
    if stage is not None:
        order, status = stage
        status_round = ANSWERED_ROUND if name == "Answer" else round_no
        changed |= _offer(
            new,
            "status",
            [status_round, order, event_id],
            lambda: {"status": status, "event_id": event_id},
        )
    timing = TIMING_STAGES.get(name)
    if timing is not None:
        at = _ms(data["occurred_at"])
        timings = new.setdefault("timings", {})
        span = timings.get(timing)
        if span is None:
            timings[timing] = {"first": at, "last": at}
            changed = True
        elif at < span["first"] or at > span["last"]:
            span["first"], span["last"] = min(span["first"], at), max(span["last"], at)
            changed = True
    changed |= _carried(new, event)
    changed |= _payload(new, event, round_no)
    changed |= resolutions.merge(new, event)
    return changed


def answered(state: RunState) -> bool:
    """Whether the run's answer is in ``state``."""
    return "answer" in state


def _value(state: RunState, slot: str) -> dict[str, Any] | None:
    held = state.get(slot)
    return None if held is None else dict(held["value"])


def _token_sums(state: RunState) -> list[int | None]:
    sums: list[int | None] = [None, None, None]
    for counts in state.get("steps", {}).values():
        for i, count in enumerate(counts):
            if count is not None:
                sums[i] = (sums[i] or 0) + int(count)
    return sums


def _verifier_evaluation(state: RunState) -> dict[str, Any] | None:
    verdict = _value(state, "verdict")
    gate = _value(state, "gatekeeper")
    evidence = _value(state, "evidence")
    answer = _value(state, "answer")
    if verdict is None and gate is None and answer is None:
        return None
    v = verdict or {}
    executed = gate or evidence or {}
    audits = [part.get("prompt_audit") for part in (answer, verdict, gate, evidence) if part]
    composer = None
    if answer is not None:
        composer = {
            key: answer[key]
            for key in ("answer_summary", "recommended_actions", "user_facing_answer", "guard")
        }
    return {
        "verdict": v.get("verdict", answer["verdict"] if answer else None),
        "groundedness_score": v.get("groundedness_score"),
        "critical_fact_count": v.get("critical_fact_count"),
        "claim_checks": v.get("claim_checks", []),
        "facts_checked": v.get("facts_checked", []),
        "rationale": v.get("rationale"),
        "round": v.get("round", answer["round"] if answer else state.get("max_round")),
        "traceability_version": TRACEABILITY_VERSION,
        "verifier_mode": v.get("verifier_mode"),
        # the roles that answered from rules, and why: the answer's list, else the verdict's
        "fallbacks": (answer or v).get("fallbacks") or [],
        "executor_output_parse_status": executed.get("executor_output_parse_status", {}),
        "executor_structured_output": executed.get("executor_structured_output"),
        "gatekeeper_result": (gate or {}).get("gatekeeper_result"),
        "composer_output": composer,
        "tool_trace_summary": (gate or {}).get("tool_trace_summary", []),
        "prompt_audit": next((a for a in audits if a), None),
    }


def row(run_id: str, state: RunState) -> dict[str, Any]:
    """The ``diagnosis_run`` columns (except created/updated) derived from a merge state."""
    request = _value(state, "request") or {}
    plan = _value(state, "plan")
    answer = _value(state, "answer")
    verdict = _value(state, "verdict")
    status = _value(state, "status") or {"status": "requested", "event_id": None}
    evaluation = _verifier_evaluation(state)
    self_evaluation: dict[str, Any] | None = None
    if evaluation is not None:
        self_evaluation = {"verifier_evaluation": evaluation}
        aiops = (verdict or {}).get("aiops_rule_evaluation")
        if aiops is not None or request.get("mode") == "AIOPS":
            self_evaluation["aiops_rule_evaluation"] = aiops
    tokens, prompt_tokens, completion_tokens = _token_sums(state)
    session_id = request.pop("session_id", None)
    planner_plan = plan["planner_plan"] if plan else None
    final_answer = None
    if answer is not None:
        final_answer = {
            key: answer[key]
            for key in ("answer_summary", "recommended_actions", "user_facing_answer", "guard")
        }
    timings = {
        stage: {"first": _iso(span["first"]), "last": _iso(span["last"])}
        for stage, span in sorted(state.get("timings", {}).items())
    }
    columns = {
        "run_id": run_id,
        "session_id": session_id,
        "mode": request.get("mode"),
        "query": request.get("query"),
        "language": request.get("language"),
        "requested_by": request.get("requested_by"),
        "requested_at": request.get("requested_at"),
        "status": status["status"],
        "round": int(state.get("max_round", 0)),
        "selected_skill": planner_plan.get("selected_skill") if planner_plan else None,
        "narrow_scope": plan.get("narrow_scope") if plan else None,
        "plan": planner_plan,
        "request": request or None,
        "final_answer": final_answer,
        "verdict": answer["verdict"] if answer else (verdict or {}).get("verdict"),
        "final_status": answer["final_status"] if answer else None,
        "timings": timings,
        "latency_ms": answer["latency_ms"] if answer else None,
        "token_count": tokens,
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "self_evaluation": self_evaluation,
        **resolutions.columns(state),
        "last_event_id": status["event_id"],
    }
    # stored without what the columns above hold (restored when read back)
    return {**columns, "merge_state": stored_state.compact(state, columns)}
