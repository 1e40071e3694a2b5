"""Configurations of the scripted server that imitate real model servers.

Each is a responder for :class:`~tests.support.fake_openai.FakeOpenAI` that answers
a completion request by its content — a request with tools, one asking for JSON,
one carrying a parameter the server refuses — with the documented behaviour of a
real server: vLLM started without ``--enable-auto-tool-choice`` (its own 400
message), a tool parser that does not fire (the call left in ``content``), an
o-series model refusing ``temperature`` and ``max_tokens`` (OpenAI's 400). The
endpoint probe (``tracebound doctor``) and the llm roles' start-up check are
tested against them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from tests.support.fake_openai import (
    DEFAULT_MODELS,
    Entry,
    FakeOpenAI,
    Responder,
    text,
    tool_call,
)

VLLM_AUTO_TOOL_CHOICE_ERROR = (
    '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'
)
O_SERIES_TEMPERATURE_ERROR = (
    "Unsupported parameter: 'temperature' is not supported with this model."
)
O_SERIES_MAX_TOKENS_ERROR = (
    "Unsupported parameter: 'max_tokens' is not supported with this model. "
    "Use 'max_completion_tokens' instead."
)


def vllm_error(code: int, message: str) -> Entry:
    """vLLM's own error body (``ErrorResponse``: top-level ``message``, ``type``, ``code``)."""
    kind = "BadRequestError" if code == 400 else "InternalServerError"
    body = {"object": "error", "message": message, "type": kind, "param": None, "code": code}
    return Entry(status=code, body=body)


def openai_error(message: str, *, param: str, code: str = "unsupported_parameter") -> Entry:
    """OpenAI's 400 for a parameter the model does not take."""
    body = {
        "error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}
    }
    return Entry(status=400, body=body)


def _first_tool(request: Mapping[str, Any]) -> tuple[str, dict[str, str]] | None:
    """The first tool of a request and arguments filling its required fields."""
    for tool in request.get("tools") or ():
        function = tool.get("function", tool) if isinstance(tool, Mapping) else {}
        name = function.get("name") if isinstance(function, Mapping) else None
        if isinstance(name, str):
            required = (function.get("parameters") or {}).get("required") or []
            return name, {str(field): "ping" for field in required}
    return None


def healthy_responder(request: Mapping[str, Any]) -> Entry:
    """A server with working tool calls and JSON mode; a plain chat gets a plain word."""
    tool = _first_tool(request)
    if tool is not None and request.get("tool_choice") != "none":
        return tool_call(*tool)
    if isinstance(request.get("response_format"), Mapping):
        return text('{"ok": true}')
    return text("pong")


def no_tool_parser_responder(request: Mapping[str, Any]) -> Entry:
    """vLLM started without ``--enable-auto-tool-choice``: tools with auto choice are a 400."""
    if request.get("tools") and request.get("tool_choice", "auto") == "auto":
        return vllm_error(400, VLLM_AUTO_TOOL_CHOICE_ERROR)
    return healthy_responder(request)


def tool_call_in_content_responder(request: Mapping[str, Any]) -> Entry:
    """A tool parser that does not fire: the call comes back as text in ``content``."""
    tool = _first_tool(request)
    if tool is not None:
        name, arguments = tool
        call = json.dumps({"name": name, "arguments": arguments})
        return text(f"<tool_call>\n{call}\n</tool_call>")
    return healthy_responder(request)


def o_series_responder(request: Mapping[str, Any]) -> Entry:
    """An o-series model: ``temperature`` and ``max_tokens`` are refused with OpenAI's 400."""
    if "temperature" in request:
        return openai_error(O_SERIES_TEMPERATURE_ERROR, param="temperature")
    if "max_tokens" in request:
        return openai_error(O_SERIES_MAX_TOKENS_ERROR, param="max_tokens")
    return healthy_responder(request)


SERVER_CONFIGURATIONS: dict[str, Responder] = {
    "healthy": healthy_responder,
    "no-tool-parser": no_tool_parser_responder,
    "tool-call-in-content": tool_call_in_content_responder,
    "temperature-rejected": o_series_responder,
}


def server_like(
    configuration: str,
    *,
    models: Sequence[str] = DEFAULT_MODELS,
    max_model_len: int | None = 32768,
) -> FakeOpenAI:
    """A (not yet started) server in one of :data:`SERVER_CONFIGURATIONS`.

    ``max_model_len`` is listed on each model as vLLM does; None lists no window.
    """
    extra = {} if max_model_len is None else {"max_model_len": max_model_len}
    return FakeOpenAI(
        models=models,
        model_extra=extra,
        responder=SERVER_CONFIGURATIONS[configuration],
    )


__all__ = [
    "O_SERIES_MAX_TOKENS_ERROR",
    "O_SERIES_TEMPERATURE_ERROR",
    "SERVER_CONFIGURATIONS",
    "VLLM_AUTO_TOOL_CHOICE_ERROR",
    "healthy_responder",
    "no_tool_parser_responder",
    "o_series_responder",
    "openai_error",
    "server_like",
    "tool_call_in_content_responder",
    "vllm_error",
]
