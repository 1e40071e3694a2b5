"""The OpenAI-compatible adapter against a scripted local server, real ``openai`` client."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import pytest
from pydantic import SecretStr

from tests.support.fake_openai import (
    Entry,
    FakeOpenAI,
    close,
    delay,
    empty,
    garbage,
    status,
    text,
    tool_call,
    tool_calls,
)
from tracebound.errors import TraceboundError
from tracebound.llm import (
    ChatModel,
    LLMSettings,
    ModelError,
    OpenAIChatModel,
    assistant_message,
    chat_model_from_settings,
    parse_json_object,
    tool_message,
)

SECRET = "sk-test-secret-value-123"
USER: list[dict[str, object]] = [
    {"role": "user", "content": "payment-service 当前是否有 HighCPUUsage 告警？"}
]
TOOLS = [
    {
        "name": "query_metrics",
        "description": "Firing alerts",
        "parameters": {"type": "object", "properties": {"service": {"type": "string"}}},
    }
]


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


def model_for(server: FakeOpenAI, **overrides: object) -> OpenAIChatModel:
    values: dict[str, object] = {
        "base_url": server.base_url,
        "api_key": SECRET,
        "model": "test-model",
        "timeout_s": 5,
        "max_retries": 0,
    }
    values.update(overrides)
    return OpenAIChatModel(LLMSettings.model_validate(values))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_text_reply_with_token_counts(server: FakeOpenAI) -> None:
    server.script(text("CPU is at 92%", prompt_tokens=42, completion_tokens=7))
    model = model_for(server)
    assert isinstance(model, ChatModel)

    reply = model.complete(USER)

    assert reply.text == "CPU is at 92%"
    assert reply.tool_calls == ()
    assert (reply.prompt_tokens, reply.completion_tokens, reply.total_tokens) == (42, 7, 49)
    assert reply.model == "test-model"
    assert reply.finish_reason == "stop"
    assert reply.duration_ms >= 0
    sent = server.requests[0]
    assert sent.body["model"] == "test-model"
    assert sent.body["messages"] == USER
    assert "temperature" not in sent.body, "not configured, so not sent"
    assert sent.body["max_tokens"] == 1024
    assert "tools" not in sent.body and "response_format" not in sent.body
    assert sent.headers["authorization"] == f"Bearer {SECRET}"


def test_missing_usage_gives_none_tokens(server: FakeOpenAI) -> None:
    server.script(text("ok", prompt_tokens=None, completion_tokens=None))
    reply = model_for(server).complete(USER)
    assert reply.total_tokens is None and reply.prompt_tokens is None


def test_json_mode_sets_response_format(server: FakeOpenAI) -> None:
    server.script(text('{"verdict": "PASS"}'))
    reply = model_for(server).complete(USER, json_mode=True)
    assert server.requests[0].body["response_format"] == {"type": "json_object"}
    assert parse_json_object(reply.text).value == {"verdict": "PASS"}


def test_reasoning_is_kept_separately(server: FakeOpenAI) -> None:
    server.script(text("answer", reasoning="first check the alert"))
    reply = model_for(server).complete(USER)
    assert reply.reasoning == "first check the alert"
    assert reply.text == "answer"


def test_tool_call_loop(server: FakeOpenAI) -> None:
    server.script(
        tool_call("query_metrics", {"service": "payment-service"}),
        text("HighCPUUsage is firing on payment-service."),
    )
    model = model_for(server)
    messages: list[dict[str, object]] = [
        {"role": "system", "content": "system rules"},
        *USER,
    ]

    first = model.complete(messages, tools=TOOLS)
    assert first.has_tool_call and first.finish_reason == "tool_calls"
    (call,) = first.tool_calls
    assert call.name == "query_metrics"
    assert call.arguments == {"service": "payment-service"}
    messages.append(assistant_message(first))
    messages.append(tool_message(call, json.dumps({"alerts": [{"alert_name": "HighCPUUsage"}]})))
    second = model.complete(messages, tools=TOOLS)

    assert second.text == "HighCPUUsage is firing on payment-service."
    sent_tools = server.requests[0].tools
    assert sent_tools is not None
    assert sent_tools[0]["type"] == "function"
    assert sent_tools[0]["function"]["name"] == "query_metrics"
    follow_up = server.requests[1].messages
    assert follow_up[-2]["role"] == "assistant"
    assert follow_up[-2]["tool_calls"][0]["id"] == call.id
    assert follow_up[-1] == {
        "role": "tool",
        "tool_call_id": call.id,
        "content": json.dumps({"alerts": [{"alert_name": "HighCPUUsage"}]}),
    }


def test_wire_format_tools_pass_through(server: FakeOpenAI) -> None:
    server.script(text("ok"))
    wire = [{"type": "function", "function": TOOLS[0]}]
    model_for(server).complete(USER, tools=wire)
    assert server.requests[0].tools == wire


def test_malformed_tool_arguments_become_none(server: FakeOpenAI) -> None:
    server.script(
        tool_calls(
            ("query_logs", '{"log_topic": "application-logs", "query": '),
            ("query_metrics", '["not", "an", "object"]'),
            ("lookup_knowledge", ""),
        )
    )
    reply = model_for(server).complete(USER, tools=TOOLS)
    broken, listed, blank = reply.tool_calls
    assert broken.arguments is None
    assert broken.raw_arguments == '{"log_topic": "application-logs", "query": '
    assert listed.arguments is None
    assert blank.arguments == {}


def test_malformed_json_text_is_invalid_not_a_crash(server: FakeOpenAI) -> None:
    server.script(text('{"answer_version": "executor_evidence_v2", "claims": [}'))
    reply = model_for(server).complete(USER, json_mode=True)
    outcome = parse_json_object(reply.text)
    assert outcome.status == "invalid"
    assert outcome.value is None


@pytest.mark.slow
def test_timeout_raises_model_error(server: FakeOpenAI) -> None:
    server.script(delay(3))
    model = model_for(server, timeout_s=0.5, max_retries=0)
    with pytest.raises(ModelError) as info:
        model.complete(USER)
    assert info.value.kind == "timeout"
    assert isinstance(info.value, TraceboundError)


def test_rate_limit_then_success_is_retried(server: FakeOpenAI) -> None:
    server.script(status(429), text("after retry"))
    reply = model_for(server, max_retries=1).complete(USER)
    assert reply.text == "after retry"
    assert len(server.requests) == 2


def test_server_error_every_time_raises(server: FakeOpenAI) -> None:
    server.default = status(500, "internal failure echoing the prompt: HighCPUUsage")
    model = model_for(server, max_retries=1)
    with pytest.raises(ModelError) as info:
        model.complete(USER)
    assert info.value.kind == "server_error"
    assert info.value.status_code == 500
    assert len(server.requests) == 2
    assert "HighCPUUsage" not in str(info.value)


@pytest.mark.parametrize("code", [429, 503])
def test_exhausted_retries_raise(server: FakeOpenAI, code: int) -> None:
    server.default = status(code)
    with pytest.raises(ModelError) as info:
        model_for(server, max_retries=0).complete(USER)
    assert info.value.status_code == code


def test_client_error_status_is_a_model_error(server: FakeOpenAI) -> None:
    server.script(status(401, "bad key"))
    with pytest.raises(ModelError) as info:
        model_for(server).complete(USER)
    assert info.value.kind == "http_status"
    assert SECRET not in str(info.value)


def test_dropped_connection_raises(server: FakeOpenAI) -> None:
    server.script(close())
    with pytest.raises(ModelError) as info:
        model_for(server).complete(USER)
    assert info.value.kind == "connection"


def test_empty_choices_raise(server: FakeOpenAI) -> None:
    server.script(empty())
    with pytest.raises(ModelError) as info:
        model_for(server).complete(USER)
    assert info.value.kind == "empty_reply"


@pytest.mark.parametrize(
    "entry",
    [
        garbage(),
        garbage(b"not json at all", json_type=True),
        garbage(b'{"choices": "nonsense"}', json_type=True),
        garbage(b'{"choices": [{"index": 0, "finish_reason": "stop"}]}', json_type=True),
    ],
)
def test_malformed_http_reply_is_a_model_error(server: FakeOpenAI, entry: Entry) -> None:
    server.script(entry)
    with pytest.raises(ModelError) as info:
        model_for(server).complete(USER)
    assert info.value.kind in {"bad_reply", "empty_reply", "client_error"}


def test_connection_refused_raises() -> None:
    settings = LLMSettings(
        base_url=f"http://127.0.0.1:{free_port()}/v1",
        api_key=SecretStr(SECRET),
        timeout_s=2,
        max_retries=0,
    )
    with pytest.raises(ModelError) as info:
        OpenAIChatModel(settings).complete(USER)
    assert info.value.kind == "connection"
    assert SECRET not in str(info.value)
    assert "127.0.0.1" not in str(info.value)


def test_settings_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRACEBOUND_LLM_BASE_URL", "http://127.0.0.1:1/v1")
    monkeypatch.setenv("TRACEBOUND_LLM_API_KEY", SECRET)
    monkeypatch.setenv("TRACEBOUND_LLM_MODEL", "qwen2.5")
    settings = LLMSettings()
    assert settings.configured
    assert settings.model == "qwen2.5"
    assert SECRET not in repr(settings)
    model = chat_model_from_settings(settings)
    assert model is not None and model.name == "qwen2.5"
    assert SECRET not in repr(model)


def test_no_base_url_means_no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRACEBOUND_LLM_BASE_URL", raising=False)
    assert chat_model_from_settings(LLMSettings()) is None
