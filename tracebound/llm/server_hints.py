"""What a model server's refusal means, and the exact flag or setting that fixes it.

Real OpenAI-compatible servers reject a request they are not set up for with a
documented message rather than a stable error code, so the only reliable way to
tell "vLLM was started without a tool parser" from "this o-series model takes no
temperature" is the text of that message. The table below holds those texts
(lower-cased fragments) next to the fix an operator can apply; ``tracebound
doctor`` and the start-up check of the llm roles both read it.

The server's message is untrusted data: it is shortened and stripped of control
characters before anyone prints it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import openai

MAX_MESSAGE_CHARS = 240

VLLM_TOOL_FIX = (
    "vLLM: start with --enable-auto-tool-choice --tool-call-parser <parser> "
    "(the parser for the model family, e.g. hermes for Qwen2.5/Qwen3, llama3_json for "
    "Llama 3.1+, mistral for Mistral)"
)
LLAMA_CPP_TOOL_FIX = "llama.cpp server: start llama-server with --jinja"
TOOL_IN_CONTENT_FIX = (
    "the server's tool parser is not firing: vLLM --enable-auto-tool-choice "
    "--tool-call-parser <parser matching the model>; llama.cpp server --jinja"
)
TEMPERATURE_FIX = (
    "o-series / gpt-5 (also through LiteLLM): unset TRACEBOUND_LLM_TEMPERATURE (or set "
    "TRACEBOUND_LLM_TEMPERATURE=none) so no temperature is sent, or set drop_params: true "
    "in the LiteLLM proxy config"
)
MAX_TOKENS_FIX = (
    "o-series / gpt-5 take max_completion_tokens instead of max_tokens: set "
    "TRACEBOUND_LLM_MAX_TOKENS_FIELD=max_completion_tokens, or set drop_params: true in the "
    "LiteLLM proxy config"
)


@dataclass(frozen=True)
class Hint:
    """One known refusal: which probe it concerns, its cause and its fix."""

    topic: str  # "tools", "temperature", "max_tokens", "json_mode", "model"
    fragments: tuple[str, ...]  # every fragment must occur in the lower-cased message
    cause: str
    fix: str


HINTS: tuple[Hint, ...] = (
    Hint(
        "tools",
        ("tool choice requires --enable-auto-tool-choice",),
        "vLLM was started without automatic tool choice",
        VLLM_TOOL_FIX,
    ),
    Hint(
        "tools",
        ("tools param requires --jinja",),
        "llama.cpp server was started without Jinja chat templates",
        LLAMA_CPP_TOOL_FIX,
    ),
    Hint(
        "tools",
        ("does not support tools",),
        "Ollama: this model has no tools capability",
        "Ollama: pick a model whose `ollama show <model>` capabilities list tools "
        "(and set TRACEBOUND_LLM_MODEL to it)",
    ),
    Hint(
        "temperature",
        ("temperature", "unsupported"),
        "the model does not accept the temperature parameter",
        TEMPERATURE_FIX,
    ),
    Hint(
        "temperature",
        ("temperature", "only the default"),
        "the model accepts only its default temperature",
        TEMPERATURE_FIX,
    ),
    Hint(
        "temperature",
        ("temperature", "drop_params"),
        "LiteLLM refuses a temperature the model does not support",
        TEMPERATURE_FIX,
    ),
    Hint(
        "max_tokens",
        ("max_tokens", "max_completion_tokens"),
        "the model takes max_completion_tokens, not max_tokens",
        MAX_TOKENS_FIX,
    ),
    Hint(
        "json_mode",
        ("response_format",),
        "the server does not accept response_format",
        "use a server or model with JSON mode (vLLM, llama.cpp server, Ollama and OpenAI "
        "accept response_format json_object); behind a proxy, let response_format through",
    ),
    Hint(
        "model",
        ("not found", "pull"),
        "Ollama has not pulled this model",
        "Ollama: run `ollama pull <model>` or set TRACEBOUND_LLM_MODEL to a pulled model",
    ),
    Hint(
        "model",
        ("does not exist",),
        "the server does not serve a model of this name",
        "set TRACEBOUND_LLM_MODEL to a served name (vLLM: --served-model-name)",
    ),
)


def clean(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """A server's text made safe to print: one line, printable, bounded."""
    flat = "".join(ch if ch.isprintable() else " " for ch in text)
    flat = " ".join(flat.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _message_of(body: object) -> str:
    """The human message in the error shapes servers use (OpenAI, vLLM, Ollama, llama.cpp)."""
    if isinstance(body, Mapping):
        inner: Any = body.get("error", body)
        if isinstance(inner, Mapping):
            message = inner.get("message")
            return message if isinstance(message, str) else ""
        if isinstance(inner, str):
            return inner
        message = body.get("message")
        return message if isinstance(message, str) else ""
    return body if isinstance(body, str) else ""


def error_message(exc: openai.APIStatusError) -> str:
    """The server's own message of a refused request, cleaned; empty when it gave none."""
    message = _message_of(exc.body)
    if not message:
        try:
            message = exc.response.text
        except Exception:  # a streamed or already-closed body
            message = ""
    return clean(message)


def match(message: str, topic: str | None = None) -> Hint | None:
    """The first known refusal ``message`` matches (of ``topic`` when given)."""
    lowered = message.lower()
    for hint in HINTS:
        if topic is not None and hint.topic != topic:
            continue
        if all(fragment in lowered for fragment in hint.fragments):
            return hint
    return None


__all__ = [
    "HINTS",
    "LLAMA_CPP_TOOL_FIX",
    "MAX_TOKENS_FIX",
    "TEMPERATURE_FIX",
    "TOOL_IN_CONTENT_FIX",
    "VLLM_TOOL_FIX",
    "Hint",
    "clean",
    "error_message",
    "match",
]
