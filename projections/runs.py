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
from tracebound.events import (
    AgentStep,
    Answer,
    DiagnosisRequested,
    Event,
    EvidenceProduced,
    GatekeeperResult,
    PlanProduced,
    RetryRequested,
    ToolInvoked,
    Verdict,
)

State = dict[str, Any]
TRACEABILITY_VERSION = "v1"
ANSWERED_ROUND = 1_000_000_000
ORIGINAL, CARRIED = 2, 1

# status slot: stage rank inside a round
STAGES: dict[type[Event], tuple[int, str]] = {
    DiagnosisRequested: (0, "requested"),
    PlanProduced: (1, "planned"),
    RetryRequested: (1, "retrying"),
    ToolInvoked: (2, "executing"),
    EvidenceProduced: (3, "gated"),
    GatekeeperResult: (4, "verifying"),
    Verdict: (5, "verifying"),
    Answer: (9, "answered"),
}
TIMING_STAGES: dict[type[Event], str] = {
    DiagnosisRequested: "request",
    PlanProduced: "plan",
    RetryRequested: "retry",
    ToolInvoked: "tools",
    EvidenceProduced: "evidence",
    GatekeeperResult: "gatekeeper",
    Verdict: "verdict",
    Answer: "answer",
    AgentStep: "agent_steps",
}


def _ms(moment: datetime) -> int:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")


def _offer(state: State, slot: str, rank: list[Any], value: Callable[[], Any]) -> bool:
    """Keep ``value()`` in ``slot`` if its rank beats the one held (the semilattice join).

    The value is built only when it wins; returns whether the slot changed.
    """
    held = state.get(slot)
    if held is None or rank > held["rank"]:
        state[slot] = {"rank": rank, "value": value()}
        return True
    return False


def _round_of(event: Event) -> int:
    if isinstance(event, ToolInvoked):
        return event.tool_invocation.round
    if isinstance(event, RetryRequested):
        return event.retry_context.round
    if isinstance(event, PlanProduced):
        return 1
    if isinstance(event, EvidenceProduced | GatekeeperResult | Verdict | Answer):
        return event.round
    return 0


def _carried(state: State, event: Event) -> bool:
    changed = False
    request = getattr(event, "request", None)
    if request is not None:
        prio = ORIGINAL if isinstance(event, DiagnosisRequested) else CARRIED
        changed |= _offer(
            state,
            "request",
            [prio, event.event_id],
            lambda: _request_value(event, request),
        )
    plan = getattr(event, "plan", None)
    if plan is not None:
        prio = ORIGINAL if isinstance(event, PlanProduced) else CARRIED
        changed |= _offer(
            state, "plan", [prio, event.event_id], lambda: plan.model_dump(mode="json")
        )
    return changed


def _request_value(event: Event, request: Any) -> dict[str, Any]:
    """The request slot: the request, its session and (original only) its trace id."""
    value = {"session_id": event.session_id, **request.model_dump(mode="json")}
    if isinstance(event, DiagnosisRequested) and event.trace_id is not None:
        value["trace_id"] = event.trace_id
    return value


def _kept(event: Event, keys: tuple[str, ...]) -> Callable[[], dict[str, Any]]:
    def build() -> dict[str, Any]:
        data = event.model_dump(mode="json", include=set(keys))  # only what is kept
        return {key: data[key] for key in keys}

    return build


GATEKEEPER_KEEP = (
    "gatekeeper_result",
    "executor_structured_output",
    "executor_output_parse_status",
    "tool_trace_summary",
    "prompt_audit",
    "round",
)
VERDICT_KEEP = (*stored_state.VERDICT_FIELDS, "round", "prompt_audit", "aiops_rule_evaluation")
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
)


def _payload(state: State, event: Event, round_no: int) -> bool:
    rank = [round_no, event.event_id]
    if isinstance(event, EvidenceProduced):
        return _offer(
            state,
            "evidence",
            rank,
            lambda: {
                "executor_structured_output": event.executor_structured_output,
                "executor_output_parse_status": event.executor_output_parse_status.model_dump(
                    mode="json"
                ),
                "prompt_audit": event.prompt_audit.model_dump(mode="json"),
            },
        )
    if isinstance(event, GatekeeperResult):
        return _offer(state, "gatekeeper", rank, _kept(event, GATEKEEPER_KEEP))
    if isinstance(event, Verdict):
        return _offer(state, "verdict", rank, _kept(event, VERDICT_KEEP))
    if isinstance(event, Answer):
        return _offer(state, "answer", [event.event_id], _kept(event, ANSWER_KEEP))
    if isinstance(event, AgentStep):
        steps = state.setdefault("steps", {})
        counts = [event.token_count, event.prompt_tokens, event.completion_tokens]
        if steps.get(event.event_id) != counts:
            steps[event.event_id] = counts
            return True
    return False


def apply(state: State | None, event: Event) -> State:
    """The merge state after ``event``; ``state`` is not modified."""
    new: State = copy.deepcopy(state) if state is not None else {}
    merge(new, event)
    return new


def merge(new: State, event: Event) -> bool:
    """Fold ``event`` into ``new`` in place; returns whether the state changed.

    Callers need no copy to tell a changed run from an unchanged one.
    """
    changed = False
    round_no = _round_of(event)
    if round_no > int(new.get("max_round", 0)) or "max_round" not in new:
        new["max_round"] = max(int(new.get("max_round", 0)), round_no)
        changed = True
    stage = STAGES.get(type(event))
    if stage is not None:
        order, status = stage
        status_round = ANSWERED_ROUND if isinstance(event, Answer) else round_no
        changed |= _offer(
            new,
            "status",
            [status_round, order, event.event_id],
            lambda: {"status": status, "event_id": event.event_id},
        )
    timing = TIMING_STAGES.get(type(event))
    if timing is not None:
        at = _ms(event.occurred_at)
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


def answered(state: State) -> bool:
    """Whether the run's answer is in ``state``."""
    return "answer" in state


def _value(state: State, slot: str) -> dict[str, Any] | None:
    held = state.get(slot)
    return None if held is None else dict(held["value"])


def _token_sums(state: State) -> list[int | None]:
    sums: list[int | None] = [None, None, None]
    for counts in state.get("steps", {}).values():
        for i, count in enumerate(counts):
            if count is not None:
                sums[i] = (sums[i] or 0) + int(count)
    return sums


def _verifier_evaluation(state: State) -> dict[str, Any] | None:
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


def row(run_id: str, state: State) -> dict[str, Any]:
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
