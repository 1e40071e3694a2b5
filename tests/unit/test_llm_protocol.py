"""What real OpenAI-compatible servers send, read in one place (real client, scripted server).

Each test reproduces one documented server behaviour with the scripted server and
checks the adapter turns it into the model's intent — or into a failed call that
says why — never into a wrong answer.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from pydantic import BaseModel, ValidationError

from tests.support.fake_openai import (
    FakeOpenAI,
    text,
    thinking,
    tool_calls_as_objects,
    tool_calls_in_content,
    truncated,
)
from tests.unit.test_llm_openai import model_for
from tracebound.llm import (
    LLMSettings,
    ModelCallFailed,
    ModelError,
    StepRecorder,
    assistant_message,
    parse_json_object,
)

USER: list[dict[str, object]] = [{"role": "user", "content": "payment-service CPU?"}]
TOOLS = [
    {"name": name, "description": name, "parameters": {"type": "object", "properties": {}}}
    for name in ("query_metrics", "query_logs")
]
METRICS = {"alert_name": "HighCPUUsage", "service": "payment-service"}
LOGS = {"log_topic": "application-logs", "query": "payment-service timeout"}
DRAFT = '{"verdict": "PASS", "claim_checks": []}'
ANSWER = '{"verdict": "REJECT", "claim_checks": [{"claim_id": "claim-1", "status": "REFUTED"}]}'


class Shape(BaseModel):
    verdict: str


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


def test_arguments_as_an_object_are_read_and_echoed_as_a_string(server: FakeOpenAI) -> None:
    server.script(tool_calls_as_objects(("query_metrics", METRICS), ("query_logs", LOGS)))
    reply = model_for(server).complete(USER, tools=TOOLS)
    metrics, logs = reply.tool_calls
    assert (metrics.arguments, logs.arguments) == (METRICS, LOGS)
    assert not reply.recovered
    echoed = assistant_message(reply)["tool_calls"][0]["function"]["arguments"]
    assert isinstance(echoed, str) and json.loads(echoed) == METRICS


@pytest.mark.parametrize(
    ("entry", "names", "rest"),
    [
        (tool_calls_in_content(("query_metrics", METRICS)), ["query_metrics"], ""),
        (
            tool_calls_in_content(("query_metrics", METRICS), ("query_logs", LOGS)),
            ["query_metrics", "query_logs"],
            "",
        ),
        (
            tool_calls_in_content(
                ("query_metrics", METRICS), ("query_logs", LOGS), tags=True, prose="Checking."
            ),
            ["query_metrics", "query_logs"],
            "Checking.",
        ),
    ],
    ids=["json", "json-list", "tags"],
)
def test_tool_calls_left_in_content_are_recovered(
    server: FakeOpenAI, entry: object, names: list[str], rest: str
) -> None:
    server.script(entry)  # type: ignore[arg-type]
    reply = model_for(server).complete(USER, tools=TOOLS)
    assert [c.name for c in reply.tool_calls] == names
    assert all(c.recovered for c in reply.tool_calls) and reply.recovered
    assert reply.tool_calls[0].arguments == METRICS
    assert len({c.id for c in reply.tool_calls}) == len(names)
    assert reply.text == rest


def test_a_tagged_call_of_an_unknown_tool_is_kept_for_the_caller_to_refuse(
    server: FakeOpenAI,
) -> None:
    server.script(tool_calls_in_content(("drop_database", {}), tags=True))
    [call] = model_for(server).complete(USER, tools=TOOLS).tool_calls
    assert (call.name, call.recovered) == ("drop_database", True)


@pytest.mark.parametrize(
    ("content", "tools"),
    [
        (json.dumps({"name": "query_metrics", "arguments": METRICS}), None),
        (json.dumps({"name": "not_offered", "arguments": {}}), TOOLS),
        (json.dumps({"name": "query_metrics", "arguments": {}, "verdict": "PASS"}), TOOLS),
        (ANSWER, TOOLS),
    ],
    ids=["no-tools-offered", "unknown-name", "extra-keys", "an-answer"],
)
def test_json_answers_are_never_taken_for_calls(
    server: FakeOpenAI, content: str, tools: list[dict[str, object]] | None
) -> None:
    server.script(text(content))
    reply = model_for(server).complete(USER, tools=tools)
    assert reply.tool_calls == () and reply.text == content


@pytest.mark.parametrize("as_field", [False, True], ids=["think-tags", "reasoning-field"])
def test_a_json_draft_in_the_thought_is_never_the_answer(
    server: FakeOpenAI, as_field: bool
) -> None:
    server.script(thinking(ANSWER, DRAFT, as_field=as_field))
    reply = model_for(server).complete(USER, json_mode=True)
    assert reply.text == ANSWER
    assert reply.reasoning is not None and DRAFT in reply.reasoning
    assert parse_json_object(reply.text).value == json.loads(ANSWER)


@pytest.mark.parametrize(
    ("content", "answer", "thought"),
    [
        (f"<think>{DRAFT}", "", DRAFT),
        (f"{DRAFT}</think>{ANSWER}", ANSWER, DRAFT),
        (f"<think>a</think>{ANSWER}<think>b</think>", ANSWER, "a\n\nb"),
    ],
    ids=["never-closed", "opening-tag-in-the-prompt", "two-blocks"],
)
def test_think_block_variants(server: FakeOpenAI, content: str, answer: str, thought: str) -> None:
    server.script(text(content))
    reply = model_for(server).complete(USER)
    assert (reply.text, reply.reasoning) == (answer, thought)


def test_a_reply_cut_off_at_the_token_limit_is_a_failed_call(server: FakeOpenAI) -> None:
    server.script(truncated('{"answer_version": "executor_evidence_v2", "claims": [{"a": 1}, {'))
    recorder = StepRecorder(
        model_for(server), run_id="r", agent_name="chat_executor", service="executor"
    )
    with pytest.raises(ModelCallFailed) as info:
        recorder.complete(USER)
    assert (info.value.kind, info.value.finish_reason) == ("truncated", "length")
    [step] = recorder.steps
    assert not step.success and step.finish_reason == "length"
    assert "token limit" in (step.error_message or "")


def test_every_step_records_the_finish_reason(server: FakeOpenAI) -> None:
    server.script(text("ok"), tool_calls_in_content(("query_metrics", METRICS)))
    recorder = StepRecorder(
        model_for(server), run_id="r", agent_name="chat_executor", service="executor"
    )
    _, first = recorder.complete(USER)
    _, second = recorder.complete(USER, tools=TOOLS)
    assert (first.finish_reason, second.finish_reason) == ("stop", "stop")
    assert second.has_tool_call and "recovered" in second.model_output


def test_only_configured_parameters_are_sent(server: FakeOpenAI) -> None:
    server.script(text("a"), text("b"))
    model_for(server).complete(USER)
    model_for(
        server,
        temperature=0.2,
        max_tokens=512,
        max_tokens_field="max_completion_tokens",
        extra_body={"chat_template_kwargs": {"enable_thinking": False}, "top_k": 20},
    ).complete(USER)
    plain, tuned = (r.body for r in server.requests)
    assert "temperature" not in plain and plain["max_tokens"] == 1024
    assert "max_completion_tokens" not in plain and "top_k" not in plain
    assert tuned["temperature"] == 0.2 and tuned["max_completion_tokens"] == 512
    assert "max_tokens" not in tuned
    assert tuned["chat_template_kwargs"] == {"enable_thinking": False} and tuned["top_k"] == 20


def test_extra_body_from_the_environment_and_its_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRACEBOUND_LLM_EXTRA_BODY", '{"top_k": 20}')
    assert LLMSettings().extra_body == {"top_k": 20}
    with pytest.raises(ValidationError, match="may not set messages"):
        LLMSettings(extra_body={"messages": []})


@pytest.mark.parametrize(
    ("mode", "expected"),
    [("json_object", "json_object"), ("json_schema", "json_schema"), ("none", None)],
)
def test_response_format_follows_the_setting(
    server: FakeOpenAI, mode: str, expected: str | None
) -> None:
    server.script(text('{"verdict": "PASS"}'))
    model_for(server, response_format=mode).complete(USER, json_mode=True, schema=Shape)
    sent = server.requests[0].body.get("response_format") or {}
    assert sent.get("type") == expected
    if expected == "json_schema":
        assert sent["json_schema"]["name"] == "Shape"
        assert sent["json_schema"]["schema"]["required"] == ["verdict"]


def test_truncation_is_a_model_error_for_plain_callers(server: FakeOpenAI) -> None:
    server.script(truncated("partial"))
    with pytest.raises(ModelError) as info:
        model_for(server).complete(USER)
    assert info.value.kind == "truncated"
