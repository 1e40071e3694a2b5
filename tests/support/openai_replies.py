"""Scripted replies of the fake OpenAI-compatible server (:mod:`tests.support.fake_openai`).

Each builder returns an :class:`Entry`: a completion in the real wire format, an
HTTP error, a delay, a dropped connection, or a reply in one of the shapes real
servers are documented to send (tool-call arguments as objects, tool calls left
in the text, a reasoning draft before the answer, a reply cut at the token
limit); plus the request matcher ``script_for`` takes and the ``/v1/models`` body.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

_ids = itertools.count(1)


@dataclass(frozen=True)
class Entry:
    """One scripted answer: an HTTP status and body, after an optional delay, or a drop."""

    status: int = 200
    body: Mapping[str, Any] | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    drop: bool = False
    then: Entry | None = None  # what a delay answers with (default entry when None)
    raw: bytes | None = None  # a body sent verbatim instead of ``body`` (garbage replies)
    content_type: str = "application/json"


def _envelope(choices: list[dict[str, Any]], model: str | None = None) -> dict[str, Any]:
    """A chat.completion body; an empty ``model`` is replaced by the requested one."""
    return {
        "id": f"chatcmpl-fake-{next(_ids)}",
        "object": "chat.completion",
        "created": 1_760_000_000,
        "model": model or "",
        "choices": choices,
    }


def _completion(
    message: dict[str, Any],
    *,
    finish_reason: str,
    prompt_tokens: int | None,
    completion_tokens: int | None,
    model: str | None,
) -> dict[str, Any]:
    body = _envelope([{"index": 0, "message": message, "finish_reason": finish_reason}], model)
    if prompt_tokens is not None and completion_tokens is not None:
        body["usage"] = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
    return body


def text(
    content: str,
    *,
    prompt_tokens: int | None = 10,
    completion_tokens: int | None = 5,
    model: str | None = None,
    reasoning: str | None = None,
    finish_reason: str = "stop",
) -> Entry:
    """A plain assistant reply; ``model`` None echoes the requested model."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    body = _completion(
        message,
        finish_reason=finish_reason,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        model=model,
    )
    return Entry(body=body)


def tool_calls(
    *calls: tuple[str, str | Mapping[str, Any]],
    content: str | None = None,
    prompt_tokens: int | None = 20,
    completion_tokens: int | None = 8,
    model: str | None = None,
) -> Entry:
    """A reply calling tools; a ``str`` argument is sent verbatim (it may be malformed)."""
    wire = []
    for name, arguments in calls:
        raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
        wire.append(
            {
                "id": f"call_{next(_ids)}",
                "type": "function",
                "function": {"name": name, "arguments": raw},
            }
        )
    message = {"role": "assistant", "content": content, "tool_calls": wire}
    body = _completion(
        message,
        finish_reason="tool_calls",
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        model=model,
    )
    return Entry(body=body)


def tool_call(name: str, arguments: str | Mapping[str, Any], **kwargs: Any) -> Entry:
    """A reply with a single tool call."""
    return tool_calls((name, arguments), **kwargs)


def status(code: int, message: str = "scripted failure", *, retry_after_ms: int = 10) -> Entry:
    """An HTTP error in the OpenAI error shape; a short Retry-After keeps retries fast."""
    kind = "rate_limit_exceeded" if code == 429 else "server_error"
    body = {"error": {"message": message, "type": kind, "param": None, "code": None}}
    return Entry(status=code, body=body, headers={"retry-after-ms": str(retry_after_ms)})


def delay(seconds: float, then: Entry | None = None) -> Entry:
    """Sleep before answering (with ``then``, or the default entry) to trip client timeouts."""
    return Entry(delay_s=seconds, then=then)


def system_prompt_has(marker: str) -> Callable[[Mapping[str, Any]], bool]:
    """A ``script_for`` matcher: the request's system message contains ``marker``."""

    def match(body: Mapping[str, Any]) -> bool:
        messages = body.get("messages")
        return isinstance(messages, list) and any(
            isinstance(m, dict)
            and m.get("role") == "system"
            and marker in str(m.get("content", ""))
            for m in messages
        )

    return match


def close() -> Entry:
    """Drop the connection without sending any response."""
    return Entry(drop=True)


def garbage(body: bytes = b"<html>gateway says hello</html>", *, json_type: bool = False) -> Entry:
    """A 200 whose body is not a chat completion (a proxy page, a broken server)."""
    return Entry(raw=body, content_type="application/json" if json_type else "text/html")


def empty() -> Entry:
    """A 200 completion with an empty ``choices`` list."""
    return Entry(body=_envelope([]))


def tool_calls_as_objects(*calls: tuple[str, Mapping[str, Any]]) -> Entry:
    """Tool calls whose ``arguments`` are JSON objects, not strings (Ollama, some proxies)."""
    wire = [
        {"id": f"call_{next(_ids)}", "type": "function", "function": {"name": n, "arguments": a}}
        for n, a in calls
    ]
    message = {"role": "assistant", "content": None, "tool_calls": wire}
    body = _completion(
        message, finish_reason="tool_calls", prompt_tokens=20, completion_tokens=8, model=None
    )
    return Entry(body=body)


def tool_calls_in_content(
    *calls: tuple[str, Mapping[str, Any]], tags: bool = False, prose: str = ""
) -> Entry:
    """Tool calls left in ``content`` with no ``tool_calls`` (a tool parser that did not fire).

    As one JSON object (one call) or a JSON list (several), or with ``tags`` as
    ``<tool_call>…</tool_call>`` blocks (Hermes-style templates, llama.cpp without
    ``--jinja``), after an optional line of ``prose``.
    """
    items = [{"name": name, "arguments": dict(arguments)} for name, arguments in calls]
    if tags:
        body = "\n".join(f"<tool_call>\n{json.dumps(i)}\n</tool_call>" for i in items)
    else:
        body = json.dumps(items[0] if len(items) == 1 else items)
    return text(f"{prose}\n{body}".strip() if prose else body)


def thinking(answer: str, draft: str, *, as_field: bool = False) -> Entry:
    """A reasoning model's reply: a ``draft`` (e.g. JSON) thought first, then the ``answer``.

    Inline as a ``<think>`` block before the answer, or ``as_field`` in
    ``reasoning_content`` (vLLM/DeepSeek reasoning parsers).
    """
    if as_field:
        return text(answer, reasoning=draft)
    return text(f"<think>\n{draft}\n</think>\n\n{answer}")


def truncated(content: str) -> Entry:
    """A reply cut off at the token limit: ``finish_reason`` ``length`` and partial text."""
    return text(content, finish_reason="length")


def models_listing(models: Sequence[str], extra: Mapping[str, Any]) -> dict[str, Any]:
    """The ``GET /v1/models`` body: each model with ``extra`` fields (vLLM's max_model_len)."""
    data = [
        {"id": name, "object": "model", "created": 1_760_000_000, "owned_by": "fake"} | dict(extra)
        for name in models
    ]
    return {"object": "list", "data": data}
