"""The diagnosis_run reducer: any interleaving across topics, any duplicates, one state."""

from __future__ import annotations

import copy
import random
from datetime import timedelta
from typing import Any

import pytest

from projections import runs
from projections.reducers import reduce_runs
from projections.run_state import RunState
from tests.support.samples import WHEN, sample
from tracebound.events import (
    AgentStep,
    Answer,
    DiagnosisRequest,
    DiagnosisRequested,
    Event,
    EvidenceProduced,
    GatekeeperResult,
    ModelFallback,
    PlanProduced,
    RetryContext,
    RetryRequested,
    ToolInvoked,
    Verdict,
)

RUN = "run-1"
VERIFIER_FIELDS = {
    "verdict",
    "groundedness_score",
    "critical_fact_count",
    "claim_checks",
    "facts_checked",
    "rationale",
    "round",
    "traceability_version",
    "executor_output_parse_status",
    "executor_structured_output",
    "gatekeeper_result",
    "composer_output",
    "tool_trace_summary",
    "prompt_audit",
}


class Clock:
    def __init__(self) -> None:
        self.n = 0

    def __call__(self, cls: type[Event], **update: Any) -> Event:
        self.n += 1
        base = sample(cls)
        fields: dict[str, Any] = {
            "run_id": RUN,
            "event_id": f"e{self.n:03d}-{cls.__name__}",
            "occurred_at": WHEN + timedelta(seconds=self.n),
            "session_id": "s-1",
        }
        fields.update(update)
        return base.model_copy(update=fields)


def _request(mode: str = "CHAT") -> DiagnosisRequest:
    return DiagnosisRequest(mode=mode, query="payment-service CPU?", language="zh")


def two_round_run(mode: str = "CHAT") -> list[Event]:
    """A run with a LOW_CONFID first round, a retry and a passing second round."""
    at = Clock()
    inv = sample(ToolInvoked).tool_invocation
    events = [
        at(DiagnosisRequested, request=_request(mode)),
        at(PlanProduced, request=_request(mode)),
        at(AgentStep, token_count=10, prompt_tokens=7, completion_tokens=3),
    ]
    for round_no in (1, 2):
        invocation = inv.model_copy(update={"round": round_no, "source_invocation_id": round_no})
        events += [
            at(ToolInvoked, tool_invocation=invocation),
            at(EvidenceProduced, round=round_no, request=_request(mode)),
            at(GatekeeperResult, round=round_no, request=_request(mode)),
            at(
                Verdict,
                round=round_no,
                verdict="LOW_CONFID" if round_no == 1 else "PASS",
                request=_request(mode),
                aiops_rule_evaluation={"report_exists": True} if mode == "AIOPS" else None,
            ),
        ]
        if round_no == 1:
            events.append(
                at(RetryRequested, retry_context=RetryContext(round=2), request=_request(mode))
            )
    events += [
        at(AgentStep, token_count=5, prompt_tokens=None, completion_tokens=5),
        at(Answer, round=2, verdict="PASS", final_status="answered", latency_ms=1234),
    ]
    return events


def fold(events: list[Event]) -> RunState:
    state: RunState | None = None
    for event in events:
        state = runs.apply(state, event)
    assert state is not None
    return state


def interleave(events: list[Event], rng: random.Random) -> list[Event]:
    """A random merge of the per-topic sequences (each topic keeps its own order)."""
    queues: dict[str, list[Event]] = {}
    for event in events:
        queues.setdefault(event.topic, []).append(event)
    merged: list[Event] = []
    while queues:
        topic = rng.choice(sorted(queues))
        merged.append(queues[topic].pop(0))
        if not queues[topic]:
            del queues[topic]
    return merged


def test_a_whole_run_in_order_is_answered_with_the_full_verifier_evaluation() -> None:
    row = runs.row(RUN, fold(two_round_run()))
    assert row["status"] == "answered" and row["verdict"] == "PASS"
    assert row["final_status"] == "answered" and row["latency_ms"] == 1234
    assert row["round"] == 2 and row["session_id"] == "s-1"
    assert (row["mode"], row["query"], row["language"]) == ("CHAT", "payment-service CPU?", "zh")
    assert row["plan"]["selection_reason"] and row["narrow_scope"] is True
    evaluation = row["self_evaluation"]["verifier_evaluation"]
    assert set(evaluation) >= VERIFIER_FIELDS
    assert evaluation["traceability_version"] == "v1"
    assert evaluation["round"] == 2 and evaluation["verdict"] == "PASS"
    assert evaluation["gatekeeper_result"]["rule_set_version"]
    assert evaluation["composer_output"]["user_facing_answer"]
    assert "aiops_rule_evaluation" not in row["self_evaluation"]
    assert (row["token_count"], row["prompt_tokens"], row["completion_tokens"]) == (15, 7, 8)
    assert set(row["timings"]) >= {"request", "plan", "tools", "verdict", "answer", "retry"}
    answer_event = two_round_run()[-1]
    assert row["last_event_id"] == answer_event.event_id


@pytest.mark.slow
def test_any_interleaving_across_topics_gives_the_same_state() -> None:
    events = two_round_run()
    expected = fold(events)
    rng = random.Random(20260708)
    for _ in range(200):
        assert fold(interleave(events, rng)) == expected
    for _ in range(50):  # even a total shuffle: the merge never depends on arrival order
        shuffled = list(events)
        rng.shuffle(shuffled)
        assert fold(shuffled) == expected


def test_duplicates_change_nothing() -> None:
    events = two_round_run()
    expected = fold(events)
    rng = random.Random(7)
    noisy = [e for e in events for _ in range(rng.randint(1, 3))]
    assert fold(noisy) == expected
    changes = reduce_runs({RUN: expected}, events)
    assert not changes.changed, "a replayed batch rewrites no row"


def test_an_answer_stands_whatever_arrives_later() -> None:
    events = two_round_run()
    answer = events[-1]
    early = runs.apply(None, answer)
    late = fold([answer, *events[:-1]])
    assert runs.row(RUN, early)["status"] == "answered"
    assert runs.row(RUN, late)["status"] == "answered"
    assert runs.row(RUN, late)["verdict"] == "PASS"


def test_status_follows_the_furthest_stage_and_never_regresses() -> None:
    events = two_round_run()
    by_type = {type(e): e for e in events}  # the last of each type (round 2)
    retry = next(e for e in events if isinstance(e, RetryRequested))
    verdict_1 = next(e for e in events if isinstance(e, Verdict) and e.round == 1)
    assert runs.row(RUN, runs.apply(None, events[0]))["status"] == "requested"
    state = fold([events[0], events[1]])
    assert runs.row(RUN, state)["status"] == "planned"
    state = fold([*events[:2], verdict_1, retry])
    assert runs.row(RUN, state)["status"] == "retrying"
    state = runs.apply(state, by_type[EvidenceProduced])
    assert runs.row(RUN, state)["status"] == "gated"
    assert runs.row(RUN, runs.apply(state, verdict_1))["status"] == "gated"


def test_a_carried_request_fills_in_until_the_original_arrives() -> None:
    events = two_round_run()
    plan = next(e for e in events if isinstance(e, PlanProduced))
    original = events[0].model_copy(
        update={"request": _request().model_copy(update={"requested_by": "alertmanager"})}
    )
    carried_only = runs.row(RUN, runs.apply(None, plan))
    assert carried_only["query"] == "payment-service CPU?" and carried_only["requested_by"] == ""
    both = runs.row(RUN, fold([plan, original]))
    assert both == runs.row(RUN, fold([original, plan]))
    assert both["requested_by"] == "alertmanager"


def test_aiops_runs_carry_the_rule_evaluation() -> None:
    row = runs.row(RUN, fold(two_round_run("AIOPS")))
    assert row["mode"] == "AIOPS"
    assert row["self_evaluation"]["aiops_rule_evaluation"] == {"report_exists": True}


def test_a_run_without_verdict_has_no_self_evaluation_yet() -> None:
    events = two_round_run()[:4]
    row = runs.row(RUN, fold(events))
    assert row["self_evaluation"] is None and row["verdict"] is None
    assert row["status"] == "executing"


def test_merge_reports_exactly_when_the_state_changed() -> None:
    events = two_round_run()
    rng = random.Random(11)
    for _ in range(50):
        noisy = [e for e in events for _ in range(rng.randint(1, 2))]
        rng.shuffle(noisy)
        state: RunState = {}
        for event in noisy:
            before = copy.deepcopy(state)
            assert runs.merge(state, event) == (state != before)


def test_the_roles_that_fell_back_to_rules_reach_the_row() -> None:
    events = two_round_run()
    planner = ModelFallback(role="planner", kind="timeout", reason="request timed out")
    verifier = ModelFallback(role="verifier", kind="invalid_output")
    answered = [*events[:-1], events[-1].model_copy(update={"fallbacks": (planner, verifier)})]
    evaluation = runs.row(RUN, fold(answered))["self_evaluation"]["verifier_evaluation"]
    assert evaluation["fallbacks"] == [
        {"role": "planner", "kind": "timeout", "reason": "request timed out"},
        {"role": "verifier", "kind": "invalid_output", "reason": ""},
    ]
    # before the answer, the verdict's list
    judged = [e for e in events if not isinstance(e, Answer)]
    judged[-2] = judged[-2].model_copy(update={"fallbacks": (planner,)})
    verdict_only = runs.row(RUN, fold(judged))["self_evaluation"]["verifier_evaluation"]
    assert [f["role"] for f in verdict_only["fallbacks"]] == ["planner"]
