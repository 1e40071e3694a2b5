"""The :class:`~tracebound.llm.port.ChatModel` adapter for OpenAI-compatible endpoints.

It uses the official ``openai`` client unchanged, so timeouts and retries (429,
5xx, dropped connections, with the server's ``Retry-After`` honoured) are the
client's own. Our job is the edges: translate the request, normalise the reply,
and turn every failure into one :class:`ModelError` whose message is safe to log
and to put on an event — it names the failure class and HTTP status only, never
the key, the endpoint URL, the prompt or the server's error body (which may echo
the prompt back). What servers do differently inside a 200 (arguments as
objects, calls left in the text, think blocks) is read by
:mod:`tracebound.llm.recovery`; a reply cut off at the token limit is a failed
call, because whatever JSON it holds is a fragment.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any, cast

import openai
from openai.types.chat import ChatCompletion, ChatCompletionMessage
from pydantic import BaseModel

from tracebound.errors import ConfigError
from tracebound.llm.budget import estimate_messages, family_for
from tracebound.llm.deadline import Pace, measured_speed
from tracebound.llm.port import ChatModel, ModelError, ModelReply, ToolCall
from tracebound.llm.recovery import arguments_of, join_thoughts, recover_tool_calls, split_thought
from tracebound.llm.settings import LLMSettings
from tracebound.llm.tokens import CALIBRATION, ServerTokenizer

log = logging.getLogger("tracebound.llm")


def _function_tool(spec: Mapping[str, Any]) -> dict[str, Any]:
    """Accept either a wire-format tool or a bare ``{name, description, parameters}``."""
    if spec.get("type") == "function" and "function" in spec:
        return dict(spec)
    return {"type": "function", "function": dict(spec)}


def _reasoning(message: ChatCompletionMessage) -> str | None:
    """Separate reasoning text, which vLLM/Ollama/DeepSeek-style servers add as extras."""
    extra = message.model_extra or {}
    for key in ("reasoning_content", "reasoning"):
        value = extra.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None


def _native_calls(message: ChatCompletionMessage) -> list[ToolCall]:
    """The reply's ``tool_calls``, arguments read whether a string or an object."""
    calls: list[ToolCall] = []
    for index, call in enumerate(message.tool_calls or ()):
        function = getattr(call, "function", None)
        if function is None:  # a non-function (custom) tool call: not ours to run
            continue
        arguments, raw = arguments_of(function.arguments)
        calls.append(
            ToolCall(
                id=call.id or f"call_{index}",
                name=function.name or "",
                arguments=arguments,
                raw_arguments=raw,
            )
        )
    return calls


def _truncated() -> ModelError:
    return ModelError(
        "model reply was cut off at the token limit (finish_reason length)",
        kind="truncated",
        finish_reason="length",
    )


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
        self.tokenizer = (
            ServerTokenizer(settings.base_url, settings.model)
            if settings.server_tokenizer
            else None
        )
        self._family = family_for(settings.model)
        self.pace = Pace(settings.timeout_s, settings.timeout_ceiling_s)

    def count_tokens(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None
    ) -> int | None:
        """The prompt tokens of a request by the server's tokenizer (None: it has none)."""
        return self.tokenizer.count(messages, tools) if self.tokenizer is not None else None

    def __repr__(self) -> str:
        return f"OpenAIChatModel(model={self.name!r})"

    def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        json_mode: bool = False,
        schema: type[BaseModel] | None = None,
    ) -> ModelReply:
        wire_messages = cast(Any, [dict(m) for m in messages])
        wire_tools = [_function_tool(t) for t in tools] if tools else []
        offered = frozenset(str(t["function"].get("name", "")) for t in wire_tools)
        settings = self.settings
        limit_field = settings.max_tokens_field
        estimated = estimate_messages(messages, wire_tools, self._family)
        deadline = self.pace.deadline(CALIBRATION.scaled(self.name, estimated), settings.max_tokens)
        log.debug("model call deadline %.1fs", deadline, extra={"deadline_s": deadline})
        started = time.monotonic()
        try:
            completion = self._client.chat.completions.create(
                model=settings.model,
                messages=wire_messages,
                tools=cast(Any, wire_tools) if wire_tools else openai.omit,
                response_format=self._response_format(json_mode, schema),
                temperature=openai.omit if settings.temperature is None else settings.temperature,
                max_tokens=settings.max_tokens if limit_field == "max_tokens" else openai.omit,
                max_completion_tokens=settings.max_tokens
                if limit_field == "max_completion_tokens"
                else openai.omit,
                extra_body=dict(settings.extra_body) or None,
                timeout=deadline,
            )
        except openai.OpenAIError as exc:
            if isinstance(exc, openai.APITimeoutError):
                self.pace.timed_out(deadline)
            raise to_model_error(exc, deadline) from None
        except ValueError:  # a 200 declared as JSON whose body does not decode
            raise _malformed() from None
        duration_ms = int((time.monotonic() - started) * 1000)
        try:
            reply = self._reply(completion, duration_ms, offered)
        except (AttributeError, TypeError, IndexError, KeyError, ValueError):
            raise _malformed() from None
        CALIBRATION.observe(self.name, estimated, reply.prompt_tokens)
        timings = getattr(completion, "timings", None)  # llama.cpp's own measurement
        self.pace.observe(
            measured_speed(
                timings if isinstance(timings, Mapping) else None,
                reply.prompt_tokens,
                reply.completion_tokens,
                duration_ms,
            )
        )
        return dataclasses.replace(reply, deadline_s=deadline)

    def _response_format(self, json_mode: bool, schema: type[BaseModel] | None) -> Any:
        """What the configuration says to send for a JSON reply, if anything."""
        mode = self.settings.response_format
        if mode == "none" or not (json_mode or schema is not None):
            return openai.omit
        if mode == "json_schema" and schema is not None:
            return {
                "type": "json_schema",
                "json_schema": {"name": schema.__name__, "schema": schema.model_json_schema()},
            }
        return {"type": "json_object"}

    def _reply(
        self, completion: ChatCompletion, duration_ms: int, offered: frozenset[str]
    ) -> ModelReply:
        if not getattr(completion, "choices", None):
            raise ModelError("model endpoint returned no choices", kind="empty_reply")
        choice = completion.choices[0]
        message = choice.message
        if message is None:
            raise ModelError("model endpoint returned no message", kind="empty_reply")
        if choice.finish_reason == "length":
            raise _truncated()
        content = message.content if isinstance(message.content, str) else ""
        text, think = split_thought(content)
        calls = _native_calls(message)
        if not calls:
            recovered, text = recover_tool_calls(text, offered)
            calls = list(recovered)
        usage = completion.usage
        return ModelReply(
            text=text,
            tool_calls=tuple(calls),
            model=completion.model or self.settings.model,
            prompt_tokens=usage.prompt_tokens if usage else None,
            completion_tokens=usage.completion_tokens if usage else None,
            total_tokens=usage.total_tokens if usage else None,
            duration_ms=duration_ms,
            finish_reason=choice.finish_reason,
            reasoning=join_thoughts(_reasoning(message), think),
        )

    def close(self) -> None:
        self._client.close()
        if self.tokenizer is not None:
            self.tokenizer.close()


def chat_model_from_settings(settings: LLMSettings | None = None) -> ChatModel | None:
    """The configured model, or ``None`` when no endpoint is set (roles use ``rules``)."""
    settings = settings or LLMSettings()
    if not settings.configured:
        return None
    return OpenAIChatModel(settings)


__all__ = ["OpenAIChatModel", "chat_model_from_settings", "to_model_error"]
