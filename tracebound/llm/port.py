"""The LLM port: what a role handler may ask of a chat model, and nothing more.

Handlers depend on :class:`ChatModel` only, so tests and replays can swap the
endpoint (a scripted server, a recorded reply, another model) without touching
role code. Every kind of endpoint trouble surfaces as one exception,
:class:`ModelError`, because the caller's reaction is always the same: fall back
to the deterministic ``rules`` implementation and keep the pipeline moving.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel

from tracebound.errors import TraceboundError


class ModelError(TraceboundError):
    """The model endpoint could not give a usable reply after the client's own retries.

    ``reason`` is a short, secret-free description (never the prompt, never the
    key, never the endpoint URL); ``status_code`` is the HTTP status when there
    was one, and ``kind`` a stable token (``timeout``, ``connection``,
    ``rate_limited``, ``server_error``, ``http_status``, ``empty_reply``,
    ``bad_reply``, ``truncated``, ``client_error``) that metrics and events can
    count on. ``finish_reason`` is the server's when a reply came but is not
    usable (``length``: cut off at the token limit, so any JSON in it is a fragment).
    """

    def __init__(
        self,
        reason: str,
        *,
        kind: str = "client_error",
        status_code: int | None = None,
        finish_reason: str | None = None,
    ):
        super().__init__(reason)
        self.reason = reason
        self.kind = kind
        self.status_code = status_code
        self.finish_reason = finish_reason


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One function call the model asked for.

    ``arguments`` is ``None`` when the model sent text that is not a JSON object;
    ``raw_arguments`` keeps that text so the executor can report the refusal.
    ``recovered`` marks a call the server left in the reply's text instead of
    ``tool_calls`` (its tool parser did not fire), so the trace can say so.
    """

    id: str
    name: str
    arguments: dict[str, Any] | None
    raw_arguments: str
    recovered: bool = False


@dataclass(frozen=True, slots=True)
class ModelReply:
    """A normalised completion: text, tool calls, token usage and timing.

    ``reasoning`` carries the model's thinking, never part of ``text``: the
    separate field some servers return (``reasoning_content`` / ``reasoning``)
    and any ``<think>`` block taken out of the content; it feeds ``AgentStep.thought``.
    """

    text: str
    tool_calls: tuple[ToolCall, ...]
    model: str
    prompt_tokens: int | None
    completion_tokens: int | None
    total_tokens: int | None
    duration_ms: int
    finish_reason: str | None
    reasoning: str | None = field(default=None)
    deadline_s: float | None = field(default=None)  # the time the call was given

    @property
    def has_tool_call(self) -> bool:
        return bool(self.tool_calls)

    @property
    def recovered(self) -> bool:
        """True when a tool call was read from the text rather than ``tool_calls``."""
        return any(call.recovered for call in self.tool_calls)


@runtime_checkable
class ChatModel(Protocol):
    """Anything that completes a chat: the OpenAI-compatible client, a test double."""

    name: str

    def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        json_mode: bool = False,
        schema: type[BaseModel] | None = None,
    ) -> ModelReply:
        """Return one reply, or raise :class:`ModelError` for any endpoint trouble.

        ``json_mode`` asks for a JSON object; ``schema`` names the shape the reply
        must have, which an endpoint configured for it enforces while decoding.
        """
        ...


def assistant_message(reply: ModelReply) -> dict[str, Any]:
    """The assistant turn to append to the conversation before sending tool results.

    The wire format wants the tool calls echoed back with their original argument
    text, so a tool loop can continue even when the arguments were malformed.
    """
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.raw_arguments},
            }
            for call in reply.tool_calls
        ]
    return message


def tool_message(call: ToolCall, content: str) -> dict[str, Any]:
    """The tool-result turn answering ``call``."""
    return {"role": "tool", "tool_call_id": call.id, "content": content}


__all__ = [
    "ChatModel",
    "ModelError",
    "ModelReply",
    "ToolCall",
    "assistant_message",
    "tool_message",
]
