"""The executor's repair turn, against the scripted server through the real ``openai`` client.

The model's first final answer is one the gatekeeper would reject (or no usable
JSON); the repair turn carries the gatekeeper's errors and the citable refs,
and the scripted corrected answer must then pass the gatekeeper and the
verifier, with the repair recorded as its own step.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from services.executor.handler import ExecutorHandler
from services.executor.ids import invocation_id
from services.executor.repair import MAX_ERRORS, citable_refs, objections
from services.executor.settings import ExecutorSettings
from services.executor.tools import ToolSettings, build_tools
from services.executor.tools.base import RunContext
from services.gatekeeper import default_ruleset
from services.gatekeeper.handler import GatekeeperHandler
from services.planner.handler import PlannerHandler
from services.planner.skills import load_skills
from services.verifier.handler import VerifierHandler
from tests.support import fake_openai as fake
from tracebound.client import new_request
from tracebound.events import (
    AgentStep,
    EvidenceProduced,
    GatekeeperResult,
    PlanProduced,
    ToolInvocation,
    Verdict,
)
from tracebound.events.step_kinds import REPAIR_PREFIX, is_repair_input
from tracebound.llm import LLMSettings, OpenAIChatModel, ParseOutcome

CPU_Q = "payment-service 当前是否有 HighCPUUsage 告警？"
PARAMS = {"alert_name": "HighCPUUsage", "service": "payment-service"}
CLAIM_TEXT = "payment-service 当前存在 HighCPUUsage 告警，CPU 使用率为 92%。"


@pytest.fixture
def server() -> Iterator[fake.FakeOpenAI]:
    with fake.FakeOpenAI() as srv:
        yield srv


@pytest.fixture(scope="module")
def plan() -> PlanProduced:
    [produced] = PlannerHandler(load_skills())(new_request(CPU_Q, language="zh"))
    assert isinstance(produced, PlanProduced)
    return produced


@pytest.fixture(scope="module")
def ref_text() -> str:
    tool = build_tools(ToolSettings.demo())["query_metrics"]
    outcome = tool.run(tool.params_model.model_validate(PARAMS), RunContext(run_id="r"))
    [ref] = outcome.retrieval_details.evidence_refs
    assert ref.raw_path == "$.alerts[0]"
    return ref.text


def _binding(sid: Any, excerpt: str) -> dict[str, Any]:
    return {
        "source_type": "tool_trace",
        "source_id": "",
        "tool_name": "query_metrics",
        "source_invocation_id": sid,
        "raw_path": "$.alerts[0]",
        "evidence_excerpt": excerpt,
    }


def _answer(*claims: tuple[str, list[dict[str, Any]]]) -> str:
    body = {
        "answer_version": "executor_evidence_v2",
        "claims": [
            {
                "claim_id": f"claim-{i}",
                "claim_type": "observation",
                "claim_text": text,
                "support_level": "direct",
                "evidence_bindings": bindings,
            }
            for i, (text, bindings) in enumerate(claims, 1)
        ],
        "hypotheses": [],
        "recommended_actions": [],
        "missing_info": [],
    }
    return json.dumps(body, ensure_ascii=False)


def _handler(server: fake.FakeOpenAI, **settings: Any) -> ExecutorHandler:
    model = OpenAIChatModel(LLMSettings(base_url=server.base_url, max_retries=0, timeout_s=5.0))
    return ExecutorHandler(
        build_tools(ToolSettings.demo()),
        load_skills(),
        ExecutorSettings(mode="llm", **settings),
        model,
        default_ruleset(),
    )


def _run(
    server: fake.FakeOpenAI, plan: PlanProduced, *answers: str, **settings: Any
) -> tuple[EvidenceProduced, list[AgentStep]]:
    server.script(fake.tool_call("query_metrics", PARAMS), *(fake.text(a) for a in answers))
    out = _handler(server, **settings)(plan)
    [evidence] = [e for e in out if isinstance(e, EvidenceProduced)]
    return evidence, [e for e in out if isinstance(e, AgentStep)]


def _judged(evidence: EvidenceProduced) -> tuple[GatekeeperResult, Verdict]:
    [checked] = GatekeeperHandler(default_ruleset())(evidence)
    assert isinstance(checked, GatekeeperResult)
    [verdict] = VerifierHandler()(checked)
    assert isinstance(verdict, Verdict)
    return checked, verdict


def _repair_data(server: fake.FakeOpenAI) -> dict[str, Any]:
    """The errors and refs the repair turn sent, read back from the recorded request."""
    message = server.requests[-1].messages[-1]
    assert message["role"] == "user" and message["content"].startswith(REPAIR_PREFIX)
    data = message["content"].split("<<<GATEKEEPER_ERRORS\n", 1)[1]
    return json.loads(data.rsplit("\nGATEKEEPER_ERRORS>>>", 1)[0])  # type: ignore[no-any-return]


def _assert_repaired_pass(evidence: EvidenceProduced, steps: list[AgentStep], sid: int) -> None:
    assert evidence.executor_output_parse_status.status == "repaired"
    assert [is_repair_input(s.model_input) for s in steps] == [False, False, True]
    assert [s.step_index for s in steps] == [0, 1, 2]
    assert evidence.round == 1, "a repair turn is not a round"
    checked, verdict = _judged(evidence)
    assert checked.gatekeeper_result.status == "pass", checked.gatekeeper_result.errors
    assert verdict.verdict == "PASS", verdict.rationale
    bindings = [
        (b["source_invocation_id"], b["raw_path"])
        for c in evidence.executor_structured_output["claims"]
        for b in c["evidence_bindings"]
    ]
    assert bindings == [(sid, "$.alerts[0]")]


def test_a_quoted_invocation_id_is_repaired_into_a_pass(
    server: fake.FakeOpenAI, plan: PlanProduced, ref_text: str
) -> None:
    sid = invocation_id(plan.run_id, 1, 0)
    excerpt = ref_text.split(", threshold", maxsplit=1)[0]
    faulty = _answer((CLAIM_TEXT, [_binding(f'"{sid}"', excerpt)]))
    fixed = _answer((CLAIM_TEXT, [_binding(sid, excerpt)]))
    evidence, steps = _run(server, plan, faulty, fixed)
    _assert_repaired_pass(evidence, steps, sid)
    data = _repair_data(server)
    [error] = data["errors"]
    assert error["rule"] == "binding.fields" and error["claim_id"] == "claim-1"
    assert error["binding"]["source_invocation_id"] == f'"{sid}"'
    assert data["citable_refs"] == [
        {
            "source_invocation_id": 1,  # the short index the model is shown
            "tool_name": "query_metrics",
            "raw_path": "$.alerts[0]",
            "text": ref_text,
        }
    ]
    assert "binding.fields" in evidence.executor_output_parse_status.detail


def test_two_claims_citing_one_alert_are_repaired_into_a_pass(
    server: fake.FakeOpenAI, plan: PlanProduced, ref_text: str
) -> None:
    sid = invocation_id(plan.run_id, 1, 0)
    cpu = ref_text.split(", threshold", maxsplit=1)[0]
    threshold = ref_text.split("; ")[1]
    faulty = _answer(
        (CLAIM_TEXT, [_binding(sid, cpu)]),
        ("payment-service 的 CPU 使用率高于 80% 阈值。", [_binding(sid, threshold)]),
    )
    fixed = _answer((CLAIM_TEXT, [_binding(sid, cpu)]))
    evidence, steps = _run(server, plan, faulty, fixed)
    _assert_repaired_pass(evidence, steps, sid)
    [error] = _repair_data(server)["errors"]
    assert error["rule"] == "evidence.unique_item" and error["claim_id"] == "claim-2"
    assert error["binding"]["raw_path"] == "$.alerts[0]"


def test_unparseable_output_gets_a_repair_turn(
    server: fake.FakeOpenAI, plan: PlanProduced, ref_text: str
) -> None:
    sid = invocation_id(plan.run_id, 1, 0)
    fixed = _answer((CLAIM_TEXT, [_binding(sid, ref_text.split(", threshold", maxsplit=1)[0])]))
    evidence, steps = _run(server, plan, "CPU is high {broken json", fixed)
    _assert_repaired_pass(evidence, steps, sid)
    [error] = _repair_data(server)["errors"]
    assert error["rule"] == "executor_output_parse_status"
    assert error["message"].startswith("invalid:")
    history = server.requests[-1].messages
    assert history[-2] == {"role": "assistant", "content": "CPU is high {broken json"}


def test_the_repair_is_one_turn_and_a_failed_repair_leaves_the_reject(
    server: fake.FakeOpenAI, plan: PlanProduced, ref_text: str
) -> None:
    sid = invocation_id(plan.run_id, 1, 0)
    faulty = _answer((CLAIM_TEXT, [_binding(f'"{sid}"', ref_text)]))
    evidence, steps = _run(server, plan, faulty, faulty, faulty)
    assert server.pending == 1, "exactly one repair turn"
    assert [is_repair_input(s.model_input) for s in steps] == [False, False, True]
    status = evidence.executor_output_parse_status
    assert status.status == "valid" and "still objected to" in status.detail
    checked, verdict = _judged(evidence)
    assert checked.gatekeeper_result.severity == "reject"
    assert verdict.verdict == "REJECT"


def test_a_repair_reply_that_is_no_json_keeps_the_first_output(
    server: fake.FakeOpenAI, plan: PlanProduced, ref_text: str
) -> None:
    sid = invocation_id(plan.run_id, 1, 0)
    faulty = _answer((CLAIM_TEXT, [_binding(f'"{sid}"', ref_text)]))
    evidence, _steps = _run(server, plan, faulty, "sorry, no idea")
    assert evidence.executor_final_answer == faulty
    assert "gave missing output" in evidence.executor_output_parse_status.detail


@pytest.mark.parametrize(
    ("quoted", "settings"),
    [(False, {}), (True, {"repair_turn": False})],
    ids=["gatekeeper-passes", "switched-off"],
)
def test_no_repair_turn_when_the_check_passes_or_repair_is_off(
    server: fake.FakeOpenAI,
    plan: PlanProduced,
    ref_text: str,
    quoted: bool,
    settings: dict[str, Any],
) -> None:
    sid = invocation_id(plan.run_id, 1, 0)
    cited = _answer((CLAIM_TEXT, [_binding(f'"{sid}"' if quoted else sid, ref_text)]))
    evidence, steps = _run(server, plan, cited, cited, **settings)
    assert len(steps) == 2 and server.pending == 1
    assert evidence.executor_output_parse_status.status == "valid"


def test_a_failing_repair_call_falls_back_to_rules_with_every_step(
    server: fake.FakeOpenAI, plan: PlanProduced, ref_text: str
) -> None:
    sid = invocation_id(plan.run_id, 1, 0)
    faulty = _answer((CLAIM_TEXT, [_binding(f'"{sid}"', ref_text)]))
    server.script(fake.tool_call("query_metrics", PARAMS), fake.text(faulty), fake.status(503))
    out = _handler(server)(plan)
    [evidence] = [e for e in out if isinstance(e, EvidenceProduced)]
    steps = [e for e in out if isinstance(e, AgentStep)]
    assert [s.success for s in steps] == [True, True, False]
    assert is_repair_input(steps[-1].model_input)
    assert "model failed" in evidence.executor_output_parse_status.detail
    assert _judged(evidence)[1].verdict == "PASS"


def _invocation(refs: int) -> ToolInvocation:
    return ToolInvocation.model_validate(
        {
            "source_invocation_id": 7,
            "tool_name": "query_logs",
            "input_params": {},
            "output": {},
            "duration_ms": 0,
            "success": True,
            "round": 1,
            "retrieval_details": {
                "evidence_status": "found",
                "evidence_refs": [
                    {"raw_path": f"$.logs[{i}]", "text": "x" * 700} for i in range(refs)
                ],
            },
        }
    )


def test_the_repair_message_is_bounded() -> None:
    refs = citable_refs([_invocation(100)])
    assert len(refs) == 40
    assert all(len(r["text"]) == 600 and r["text_cut_at"] == 600 for r in refs)
    claims = [
        {"claim_id": f"c{i}", "claim_type": "observation", "claim_text": "x"} for i in range(30)
    ]
    value = {"answer_version": "executor_evidence_v2", "claims": claims}
    problems = objections(ParseOutcome("valid", "", value), [], default_ruleset())
    assert len(problems) == MAX_ERRORS


@pytest.mark.parametrize(
    ("summary", "expected"),
    [
        ("user: repair: the gatekeeper would reject", True),
        ("user: payment-service repair: status?", False),
        ("tool[call_1]: {}", False),
        ("", False),
        (None, False),
    ],
)
def test_repair_steps_are_told_apart_by_their_input(summary: str | None, expected: bool) -> None:
    assert is_repair_input(summary) is expected


def test_a_claim_whose_fact_does_not_check_is_repaired_into_a_pass(
    server: fake.FakeOpenAI, plan: PlanProduced, ref_text: str
) -> None:
    """The citation is sound but the number is not the item's: the repair names the fact."""
    sid = invocation_id(plan.run_id, 1, 0)
    excerpt = ref_text.split(", threshold", maxsplit=1)[0]
    wrong = CLAIM_TEXT.replace("92%", "97%")
    faulty = _answer((wrong, [_binding(sid, excerpt)]))
    fixed = _answer((CLAIM_TEXT, [_binding(sid, excerpt)]))
    evidence, steps = _run(server, plan, faulty, fixed)
    _assert_repaired_pass(evidence, steps, sid)
    errors = _repair_data(server)["errors"]
    assert errors and all(e["rule"] == "verifier.fact_stated" for e in errors)
    assert any("97%" in e["fact"] and e["claim_id"] == "claim-1" for e in errors)
    assert "verifier.fact_stated" in evidence.executor_output_parse_status.detail
