"""Reading what real OpenAI-compatible servers actually send, in one place.

Servers differ in ways the wire format does not forbid, and each difference
used to turn into a wrong answer further down:

- tool-call ``arguments`` arrive as a JSON string (OpenAI, vLLM) or as an object
  (Ollama's native shape, some proxies);
- when a server's tool parser does not fire (vLLM without a matching
  ``--tool-call-parser``, llama.cpp without ``--jinja``, several calls in one
  reply) the calls stay in ``content`` as JSON or ``<tool_call>…</tool_call>``
  tags — taken as the final answer, they would end a tool loop with no evidence;
- reasoning models write ``<think>…</think>`` before the answer (or the server
  moves it to ``reasoning_content``/``reasoning``); a JSON draft inside it must
  never be read as the answer.

So the adapter passes every reply through here: the thought is split off, calls
left in content are recovered (and marked so the trace says so), and argument
objects are normalised to the string the wire format echoes back.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from typing import Any

from tracebound.llm.port import ToolCall

MAX_RECOVERED_CALLS = 16
_THINK = re.compile(r"<think(?:ing)?>(.*?)</think(?:ing)?>", re.DOTALL | re.IGNORECASE)
_OPEN_THINK = re.compile(r"<think(?:ing)?>", re.IGNORECASE)
_CLOSE_THINK = re.compile(r"</think(?:ing)?>", re.IGNORECASE)
_TOOL_TAG = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"^```[ \t]*(?:json)?[ \t]*\r?\n?(.*?)```$", re.DOTALL | re.IGNORECASE)
_CALL_KEYS = frozenset({"name", "arguments", "parameters", "id", "type"})


def split_thought(text: str) -> tuple[str, str | None]:
    """``(answer, thought)``: every think block moved out of the answer.

    An opening tag never closed (the reply ended while thinking) makes the rest
    thought, not answer; a closing tag with no opening one (chat templates that
    put ``<think>`` into the prompt) makes everything before it thought.
    """
    thoughts = [m.strip() for m in _THINK.findall(text)]
    answer = _THINK.sub("", text)
    opened = _OPEN_THINK.search(answer)
    if opened is not None:
        thoughts.append(answer[opened.end() :].strip())
        answer = answer[: opened.start()]
    closed = list(_CLOSE_THINK.finditer(answer))
    if closed:
        thoughts.insert(0, answer[: closed[0].start()].strip())
        answer = answer[closed[-1].end() :]
    kept = [t for t in thoughts if t]
    return answer.strip(), "\n\n".join(kept) if kept else None


def join_thoughts(*parts: str | None) -> str | None:
    """The reasoning field and the think blocks, in that order, as one thought."""
    kept = [p.strip() for p in parts if p and p.strip()]
    return "\n\n".join(kept) if kept else None


def arguments_of(value: Any) -> tuple[dict[str, Any] | None, str]:
    """``(parsed object or None, raw text)`` of tool-call arguments, string or object.

    An object is serialised so the echoed assistant turn keeps the wire format's
    string; text that is not a JSON object parses to ``None`` (the caller refuses
    the call and says why).
    """
    if isinstance(value, dict):
        return value, json.dumps(value, ensure_ascii=False)
    raw = value if isinstance(value, str) else ("" if value is None else str(value))
    if not raw.strip():
        return {}, raw
    try:
        parsed = json.loads(raw)
    except (json.JSONDecodeError, RecursionError):
        return None, raw
    return (parsed if isinstance(parsed, dict) else None), raw


def _as_call(item: Any, index: int) -> ToolCall | None:
    """One ``{"name", "arguments"}`` (or ``parameters``, or OpenAI's nested) object as a call."""
    if not isinstance(item, dict):
        return None
    if isinstance(item.get("function"), dict):
        item = {**item["function"], "id": item.get("id")}
    name = item.get("name")
    if not isinstance(name, str) or not name or not set(item) <= _CALL_KEYS:
        return None
    arguments, raw = arguments_of(item.get("arguments", item.get("parameters")))
    call_id = item.get("id") if isinstance(item.get("id"), str) and item.get("id") else None
    return ToolCall(
        id=call_id or f"recovered_{index}",
        name=name,
        arguments=arguments,
        raw_arguments=raw,
        recovered=True,
    )


def _decode(text: str) -> Any:
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced is not None:
        body = fenced.group(1).strip()
    try:
        return json.loads(body)
    except (json.JSONDecodeError, RecursionError):
        return None


def _from_tags(text: str) -> tuple[ToolCall, ...] | None:
    blocks = _TOOL_TAG.findall(text)
    if not blocks:
        return None
    calls = []
    for index, block in enumerate(blocks[:MAX_RECOVERED_CALLS]):
        call = _as_call(_decode(block), index)
        if call is None:  # a tag whose body is not a call: keep the intent visible
            call = ToolCall(f"recovered_{index}", "", None, block.strip()[:500], recovered=True)
        calls.append(call)
    return tuple(calls)


def recover_tool_calls(text: str, offered: Collection[str]) -> tuple[tuple[ToolCall, ...], str]:
    """``(calls, remaining text)`` a server left in ``content``; no calls for an answer.

    ``<tool_call>`` tags are an unambiguous intent, whatever tool they name (an
    unknown one is refused by the caller, visibly). A bare JSON object or list
    counts only when every item is exactly a call and names an offered tool, so
    a JSON answer is never mistaken for a call.
    """
    if not offered or not text.strip():
        return (), text
    tagged = _from_tags(text)
    if tagged is not None:
        return tagged, _TOOL_TAG.sub("", text).strip()
    value = _decode(text)
    items = value if isinstance(value, list) else [value]
    if not items or len(items) > MAX_RECOVERED_CALLS:
        return (), text
    calls = [_as_call(item, index) for index, item in enumerate(items)]
    if any(c is None or c.name not in offered for c in calls):
        return (), text
    return tuple(c for c in calls if c is not None), ""


__all__ = [
    "MAX_RECOVERED_CALLS",
    "arguments_of",
    "join_thoughts",
    "recover_tool_calls",
    "split_thought",
]
