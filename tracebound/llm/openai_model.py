"""The :class:`~tracebound.llm.port.ChatModel` adapter for OpenAI-compatible endpoints.

It uses the official ``openai`` client unchanged, so timeouts and retries (429,
5xx, dropped connections, with the server's ``Retry-After`` honoured) are the
client's own. Our job is the edges: translate the request, normalise the reply,
and turn every failure into one :class:`ModelError` whose message is safe to log
and to put on an event — it names the failure class and HTTP status only, never
the key, the endpoint URL, the prompt or the server's error body (which may echo
the prompt back).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any, cast

import openai
from openai.types.chat import ChatCompletion, ChatCompletionMessage

from tracebound.errors import ConfigError
from tracebound.llm.port import ChatModel, ModelError, ModelReply, ToolCall
from tracebound.llm.settings import LLMSettings


def _function_tool(spec: Mapping[str, Any]) -> dict[str, Any]:
    """Accept either a wire-format tool or a bare ``{name, description, parameters}``."""
    if spec.get("type") == "function" and "function" in spec:
        return dict(spec)
    return {"type": "function", "function": dict(spec)}


def _parse_arguments(raw: str) -> dict[str, Any] | None:
    try:
        value = json.loads(raw) if raw.strip() else {}
    except (json.JSONDecodeError, TypeError):
        return None
    return value if isinstance(value, dict) else None


def _reasoning(message: ChatCompletionMessage) -> str | None:
    """Separate reasoning text, which vLLM/Ollama/DeepSeek-style servers add as extras."""
    extra = message.model_extra or {}
    for key in ("reasoning_content", "reasoning"):
        value = extra.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None


def _malformed() -> ModelError:
    """A 200 that is not a chat completion (a proxy's HTML page, a half-compatible server)."""
    return ModelError("model endpoint returned a malformed reply", kind="bad_reply")


def to_model_error(exc: openai.OpenAIError, timeout_s: float) -> ModelError:
    """Map a client exception to a short, secret-free :class:`ModelError`."""
    if isinstance(exc, openai.APITimeoutError):
        return ModelError(f"model endpoint timed out after {timeout_s:g}s", kind="timeout")
    if isinstance(exc, openai.APIConnectionError):
        return ModelError("could not connect to the model endpoint", kind="connection")
    if isinstance(exc, openai.RateLimitError):
        return ModelError(
            "model endpoint rate-limited the request (HTTP 429)",
            kind="rate_limited",
            status_code=429,
        )
    if isinstance(exc, openai.InternalServerError):
        status = exc.status_code
        return ModelError(
            f"model endpoint server error (HTTP {status})", kind="server_error", status_code=status
        )
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        return ModelError(
            f"model endpoint refused the request (HTTP {status})",
            kind="http_status",
            status_code=status,
        )
    return ModelError(f"model client error ({type(exc).__name__})", kind="client_error")


class OpenAIChatModel:
    """A chat model behind any OpenAI-compatible ``/v1/chat/completions`` endpoint."""

    def __init__(self, settings: LLMSettings, *, client: openai.OpenAI | None = None) -> None:
        if not settings.base_url:
            raise ConfigError("TRACEBOUND_LLM_BASE_URL is not set; no model endpoint configured")
        self.settings = settings
        self.name = settings.model
        self._client = client or openai.OpenAI(
            base_url=settings.base_url,
            api_key=settings.api_key.get_secret_value(),
            timeout=settings.timeout_s,
            max_retries=settings.max_retries,
        )

    def __repr__(self) -> str:
        return f"OpenAIChatModel(model={self.name!r})"

    def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        json_mode: bool = False,
    ) -> ModelReply:
        wire_messages = cast(Any, [dict(m) for m in messages])
        wire_tools: Any = [_function_tool(t) for t in tools] if tools else openai.omit
        response_format: Any = {"type": "json_object"} if json_mode else openai.omit
        started = time.monotonic()
        try:
            completion = self._client.chat.completions.create(
                model=self.settings.model,
                messages=wire_messages,
                tools=wire_tools,
                response_format=response_format,
                temperature=(
                    openai.omit if self.settings.temperature is None else self.settings.temperature
                ),
            )
        except openai.OpenAIError as exc:
            raise to_model_error(exc, self.settings.timeout_s) from None
        except ValueError:  # a 200 declared as JSON whose body does not decode
            raise _malformed() from None
        duration_ms = int((time.monotonic() - started) * 1000)
        try:
            return self._reply(completion, duration_ms)
        except (AttributeError, TypeError, IndexError, KeyError, ValueError):
            raise _malformed() from None

    def _reply(self, completion: ChatCompletion, duration_ms: int) -> ModelReply:
        if not getattr(completion, "choices", None):
            raise ModelError("model endpoint returned no choices", kind="empty_reply")
        choice = completion.choices[0]
        message = choice.message
        if message is None:
            raise ModelError("model endpoint returned no message", kind="empty_reply")
        calls: list[ToolCall] = []
        for index, call in enumerate(message.tool_calls or ()):
            function = getattr(call, "function", None)
            if function is None:  # a non-function (custom) tool call: not ours to run
                continue
            raw = function.arguments or ""
            calls.append(
                ToolCall(
                    id=call.id or f"call_{index}",
                    name=function.name or "",
                    arguments=_parse_arguments(raw),
                    raw_arguments=raw,
                )
            )
        usage = completion.usage
        return ModelReply(
            text=message.content if isinstance(message.content, str) else "",
            tool_calls=tuple(calls),
            model=completion.model or self.settings.model,
            prompt_tokens=usage.prompt_tokens if usage else None,
            completion_tokens=usage.completion_tokens if usage else None,
            total_tokens=usage.total_tokens if usage else None,
            duration_ms=duration_ms,
            finish_reason=choice.finish_reason,
            reasoning=_reasoning(message),
        )

    def close(self) -> None:
        self._client.close()


def chat_model_from_settings(settings: LLMSettings | None = None) -> ChatModel | None:
    """The configured model, or ``None`` when no endpoint is set (roles use ``rules``)."""
    settings = settings or LLMSettings()
    if not settings.configured:
        return None
    return OpenAIChatModel(settings)


__all__ = ["OpenAIChatModel", "chat_model_from_settings", "to_model_error"]
