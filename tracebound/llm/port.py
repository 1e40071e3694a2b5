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

from tracebound.errors import TraceboundError


class ModelError(TraceboundError):
    """The model endpoint could not give a usable reply after the client's own retries.

    ``reason`` is a short, secret-free description (never the prompt, never the
    key, never the endpoint URL); ``status_code`` is the HTTP status when there
    was one, and ``kind`` a stable token (``timeout``, ``connection``,
    ``rate_limited``, ``server_error``, ``http_status``, ``empty_reply``,
    ``bad_reply``, ``client_error``) that metrics and events can count on.
    """

    def __init__(self, reason: str, *, kind: str = "client_error", status_code: int | None = None):
        super().__init__(reason)
        self.reason = reason
        self.kind = kind
        self.status_code = status_code


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One function call the model asked for.

    ``arguments`` is ``None`` when the model sent text that is not a JSON object;
    ``raw_arguments`` keeps that text so the executor can report the refusal.
    """

    id: str
    name: str
    arguments: dict[str, Any] | None
    raw_arguments: str


@dataclass(frozen=True, slots=True)
class ModelReply:
    """A normalised completion: text, tool calls, token usage and timing.

    ``reasoning`` carries the separate reasoning text some servers return
    (``reasoning_content`` / ``reasoning``); it feeds ``AgentStep.thought``.
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

    @property
    def has_tool_call(self) -> bool:
        return bool(self.tool_calls)


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
    ) -> ModelReply:
        """Return one reply, or raise :class:`ModelError` for any endpoint trouble."""
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
