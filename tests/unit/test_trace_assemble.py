"""Trace assembly from read-model rows, without a database: bindings, outcomes, filters."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from projections import run_list, trace

HOSTILE = "<script>alert('x')</script>\"><img src=x onerror=alert(1)>\x1b[31mred"
T0 = datetime(2026, 7, 8, 22, 40, 0, tzinfo=UTC)


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(T0.timestamp() + ms / 1000, UTC).isoformat(
        timespec="milliseconds"
    )


def sample_rows() -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """A run with three claims: one passed, one back-filled, one failed and refuted."""
    bindings = [
        {
            "tool_name": "query_metrics",
            "source_invocation_id": 11,
            "raw_path": "$.alerts[0]",
            "evidence_excerpt": "HighCPUUsage current=92%",
        },
        {
            "tool_name": "query_logs",
            "source_invocation_id": 12,
            "raw_path": "$.logs[1]",
            "evidence_excerpt": "pool exhausted",
        },
        {
            "tool_name": "query_logs",
            "source_invocation_id": 12,
            "raw_path": "$.logs[9]",
            "evidence_excerpt": HOSTILE,
        },
    ]
    structured = {
        "answer_version": "executor_evidence_v2",
        "claims": [
            {
                "claim_id": "claim-1",
                "claim_type": "observation",
                "claim_text": "payment-service has a firing HighCPUUsage alert at 92%.",
                "evidence_bindings": [bindings[0]],
            },
            {
                "claim_id": "claim-2",
                "claim_type": "observation",
                "claim_text": "the pool was exhausted",
                "evidence_bindings": [bindings[1]],
            },
            {
                "claim_id": "claim-3",
                "claim_type": "observation",
                "claim_text": HOSTILE,
                "evidence_bindings": [bindings[2]],
            },
        ],
        "hypotheses": [],
        "missing_info": ["nothing about the database"],
    }
    said = json.loads(json.dumps(structured))
    said["claims"][1]["evidence_bindings"][0].update(source_invocation_id=None, raw_path=None)
    gate = {
        "status": "fail",
        "severity": "reject",
        "rule_set_version": "gatekeeper-rules-v2",
        "failed_rules": ["evidence.raw_path"],
        "checked_bindings": [
            {"claim_id": "claim-1", "binding_index": 0, "status": "pass", "matched_text": "x"},
            {"claim_id": "claim-2", "binding_index": 0, "status": "backfilled"},
            {
                "claim_id": "claim-3",
                "binding_index": 0,
                "status": "fail",
                "rule": "evidence.raw_path",
                "reason": "raw_path $.logs[9] is not among the invocation's refs",
            },
        ],
        "warnings": [
            {
                "rule": "invocation.backfill",
                "claim_id": "claim-2",
                "binding_index": 0,
                "message": "back-filled source_invocation_id and raw_path from the unique ref",
                "source_invocation_id": 12,
                "raw_path": "$.logs[1]",
            }
        ],
        "errors": [
            {
                "rule": "evidence.raw_path",
                "severity": "reject",
                "claim_id": "claim-3",
                "binding_index": 0,
                "message": "raw_path $.logs[9] is not among the invocation's refs",
            }
        ],
    }
    evaluation = {
        "verdict": "REJECT",
        "groundedness_score": 0.5,
        "critical_fact_count": 2,
        "claim_checks": [
            {
                "claim_id": "claim-1",
                "claim_type": "observation",
                "claim_text": "",
                "status": "SUPPORTED",
                "reason": "all facts found",
                "raw_paths": ["$.alerts[0]"],
            },
            {
                "claim_id": "claim-2",
                "claim_type": "observation",
                "claim_text": "",
                "status": "NOT_ENOUGH_INFO",
                "reason": "back-filled evidence only",
            },
            {
                "claim_id": "claim-3",
                "claim_type": "observation",
                "claim_text": "",
                "status": "REFUTED",
                "reason": "the gatekeeper rejected its evidence",
            },
        ],
        "facts_checked": [
            {"claim_id": "claim-1", "kind": "number", "fact": "92%", "found": True},
            {  # a verdict written before facts said what they were checked against
                "claim_id": "claim-3",
                "kind": "service",
                "fact": "order-service",
                "found": False,
            },
            {
                "claim_id": "claim-3",
                "kind": "number",
                "fact": "29% [current]",
                "found": False,
                "conflict": True,
                "detail": "evidence says 'current=92%'",
            },
        ],
        "rationale": "REJECT: " + HOSTILE,
        "round": 1,
        "traceability_version": "v1",
        "verifier_mode": "rules",
        "executor_output_parse_status": {"status": "valid", "detail": ""},
        "executor_structured_output": structured,
        "gatekeeper_result": gate,
        "composer_output": {
            "answer_summary": "s",
            "user_facing_answer": "The answer. " + HOSTILE,
            "recommended_actions": [{"action_text": "check the pool", "reason": "r"}],
            "guard": {"ok": False, "violations": ["overclaim " + HOSTILE], "replaced": True},
        },
        "tool_trace_summary": [],
        "prompt_audit": {"version": "chat-prompts-v1", "prompts": []},
    }
    run = {
        "run_id": "run-1",
        "session_id": "sess-1",
        "mode": "CHAT",
        "query": "payment-service 当前是否有 HighCPUUsage 告警？",
        "language": "zh",
        "requested_by": "cli",
        "requested_at": T0,
        "status": "answered",
        "round": 1,
        "selected_skill": "diagnose-high-cpu",
        "narrow_scope": True,
        "plan": {"selection_reason": "matched", "plan": ["query_metrics"], "reasoning": "r"},
        "request": {"mode": "CHAT", "query": "q"},
        "final_answer": None,
        "verdict": "REJECT",
        "final_status": "answered",
        "timings": {
            "request": {"first": _iso(0), "last": _iso(0)},
            "plan": {"first": _iso(100), "last": _iso(100)},
            "tools": {"first": _iso(300), "last": _iso(400)},
            "evidence": {"first": _iso(450), "last": _iso(450)},
            "gatekeeper": {"first": _iso(500), "last": _iso(500)},
            "verdict": {"first": _iso(600), "last": _iso(600)},
            "answer": {"first": _iso(700), "last": _iso(700)},
        },
        "latency_ms": 700,
        "token_count": 42,
        "prompt_tokens": 30,
        "completion_tokens": 12,
        "self_evaluation": {"verifier_evaluation": evaluation},
        "merge_state": {
            "evidence": {"rank": [1, "e"], "value": {"executor_structured_output": said}}
        },
        "updated_at": T0,
    }
    invocations = [
        {
            "id": 11,
            "run_id": "run-1",
            "round": 1,
            "tool_name": "query_metrics",
            "input_params": {"service": "payment-service"},
            "output_preview": "1 alert",
            "retrieval_layer": "demo",
            "backend": {"name": "prometheus", "url": "http://prom.test:9090"},
            "retrieval_details": {
                "evidence_status": "supported",
                "evidence_refs": [{"raw_path": "$.alerts[0]", "text": "HighCPUUsage current=92%"}],
            },
            "duration_ms": 50,
            "success": True,
            "error_message": None,
            "created_at": datetime.fromisoformat(_iso(300)),
        },
        {
            "id": 12,
            "run_id": "run-1",
            "round": 1,
            "tool_name": "query_logs",
            "input_params": {"query": HOSTILE},
            "output_preview": HOSTILE,
            "retrieval_layer": "postgres",
            "retrieval_details": {
                "evidence_status": "supported",
                "evidence_refs": [
                    {"raw_path": "$.logs[1]", "text": "HikariPool-1 - pool exhausted"}
                ],
            },
            "duration_ms": 80,
            "success": True,
            "error_message": None,
            "created_at": datetime.fromisoformat(_iso(400)),
        },
    ]
    steps = [
        {
            "event_id": "step-1",
            "agent_name": "chat_executor",
            "step_index": 0,
            "model": "m",
            "prompt_version": "v2",
            "has_tool_call": True,
            "duration_ms": 12,
            "token_count": 42,
            "prompt_tokens": 30,
            "completion_tokens": 12,
            "success": True,
            "error_message": None,
            "created_at": datetime.fromisoformat(_iso(200)),
            "model_input": "[budget 7100/7168 tokens, cut: tool result c1 cut] tool[c2]: {}",
        }
    ]
    return run, invocations, steps


def sample_trace() -> dict[str, Any]:
    """The served document of the sample run."""
    return trace.assemble_trace(*sample_rows()).document()


def test_trace_is_json_native_and_answers_the_replay_questions() -> None:
    t = sample_trace()
    assert json.loads(json.dumps(t)) == t
    claims = {c["claim_id"]: c for c in t["claims"]}
    assert list(claims) == ["claim-1", "claim-2", "claim-3"]
    [passed] = claims["claim-1"]["bindings"]
    assert passed["raw_path"] == "$.alerts[0]" and passed["source_invocation_id"] == 11
    assert passed["recorded_ref_text"] == "HighCPUUsage current=92%"
    assert passed["gatekeeper"]["status"] == "pass"
    assert claims["claim-1"]["verifier"]["status"] == "SUPPORTED"
    assert claims["claim-1"]["verifier"]["facts"] == [
        {"kind": "number", "fact": "92%", "found": True, "outcome": "checked", "detail": ""}
    ]
    facts = [
        (f["kind"], f["fact"], f["found"], f["outcome"], f["detail"])
        for f in claims["claim-3"]["verifier"]["facts"]
    ]
    assert facts == [
        ("service", "order-service", False, "not stated", ""),
        ("number", "29% [current]", False, "contradicted", "evidence says 'current=92%'"),
    ]
    [filled] = claims["claim-2"]["bindings"]
    assert filled["gatekeeper"]["status"] == "backfilled"
    assert filled["gatekeeper"]["warnings"][0]["rule"] == "invocation.backfill"
    assert filled["executor_cited"] == {"source_invocation_id": None, "raw_path": None}
    assert filled["recorded_ref_text"] == "HikariPool-1 - pool exhausted"
    assert claims["claim-2"]["gatekeeper"]["status"] == "backfilled"
    [failed] = claims["claim-3"]["bindings"]
    assert failed["recorded_ref_status"] == "no_ref" and failed["recorded_ref_text"] is None
    assert failed["gatekeeper"]["rule"] == "evidence.raw_path"
    assert claims["claim-3"]["gatekeeper"]["status"] == "fail"
    assert claims["claim-3"]["verifier"]["status"] == "REFUTED"
    assert t["gatekeeper"]["rule_set_version"] == "gatekeeper-rules-v2"
    assert t["gatekeeper"]["failed_rules"] == ["evidence.raw_path"]
    assert t["verifier"]["verdict"] == "REJECT" and t["verifier"]["mode"] == "rules"
    assert t["answer"]["guard"] == {
        "ok": False,
        "violations": ["overclaim " + HOSTILE],
        "replaced": True,
    }
    assert t["tokens"]["total"] == {"token_count": 42, "prompt_tokens": 30, "completion_tokens": 12}
    [step] = t["agent_steps"]
    assert step["budget"] == "budget 7100/7168 tokens, cut: tool result c1 cut"
    assert "model_input" not in step, "the trace names the cut, not the prompt's data"
    assert [s["stage"] for s in t["timeline"]] == [
        "request",
        "plan",
        "tools",
        "evidence",
        "gatekeeper",
        "verdict",
        "answer",
    ]
    tools = next(s for s in t["timeline"] if s["stage"] == "tools")
    assert (tools["at_ms"], tools["span_ms"], tools["since_previous_ms"]) == (300, 100, 200)
    assert [i["at_ms"] for i in t["tool_invocations"]] == [300, 400]
    # the second was recorded before invocations named their backend
    assert [i["backend"] for i in t["tool_invocations"]] == [
        "prometheus (http://prom.test:9090)",
        None,
    ]
    assert t["run"]["requested_at"] == "2026-07-08T22:40:00.000+00:00"


def test_a_malformed_executor_output_still_gives_a_trace() -> None:
    run, invocations, steps = sample_rows()
    evaluation = run["self_evaluation"]["verifier_evaluation"]
    evaluation["executor_structured_output"] = {"claims": ["not an object", {"claim_id": 7}]}
    evaluation["gatekeeper_result"] = {}
    t = trace.assemble_trace(run, invocations, steps).document()
    ids = [c["claim_id"] for c in t["claims"]]
    assert ids[:2] == ["#0", "7"]
    assert {"claim-1", "claim-2", "claim-3"} <= set(ids)  # judged claims are still listed
    assert t["gatekeeper"] is None


def test_a_run_without_evaluation_has_an_empty_trace() -> None:
    run: dict[str, Any] = {
        "run_id": "r",
        "status": "requested",
        "timings": {},
        "self_evaluation": None,
    }
    t = trace.assemble_trace(run, [], []).document()
    assert t["claims"] == [] and t["answer"] is None and t["verifier"] is None
    assert t["timeline"] == []


@pytest.mark.parametrize(
    ("params", "param"),
    [
        ({"status": "done"}, "status"),
        ({"verdict": "pass"}, "verdict"),
        ({"since": "yesterday"}, "since"),
        ({"since": "2026-07-09T00:00:00Z", "until": "2026-07-08T00:00:00Z"}, "until"),
        ({"service": "pay ment"}, "service"),
        ({"service": "a'; DROP TABLE diagnosis_run; --"}, "service"),
        ({"limit": "0"}, "limit"),
        ({"limit": "501"}, "limit"),
        ({"limit": "ten"}, "limit"),
        ({"cursor": "!!!"}, "cursor"),
        ({"cursor": "WzEsMl0"}, "cursor"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_bad_filters_name_the_parameter(params: dict[str, str], param: str) -> None:
    with pytest.raises(run_list.FilterError) as caught:
        run_list.parse_filter(params)
    assert caught.value.param == param


def test_filters_and_cursors_round_trip() -> None:
    cursor = run_list.encode_cursor(T0, "run-9")
    assert run_list.decode_cursor(cursor) == (T0, "run-9")
    selection = run_list.parse_filter(
        {
            "status": "answered",
            "verdict": "PASS",
            "since": "2026-07-08T00:00:00",
            "limit": "5",
            "service": "payment-service",
            "cursor": cursor,
        }
    )
    assert selection.since == datetime(2026, 7, 8, tzinfo=UTC)
    assert (selection.limit, selection.cursor, selection.service) == (5, cursor, "payment-service")
    assert run_list.parse_filter({}) == run_list.RunFilter()
