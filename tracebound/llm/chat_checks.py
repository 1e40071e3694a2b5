"""The probe's chat requests: parameters, tool calling and JSON mode, one tiny call each.

Each request asks for one capability only, so a refusal names its cause: the
parameter check sends the configured ``temperature`` and nothing else optional,
the tool check sends one tool with ``tool_choice: "auto"`` (what the roles rely
on: vLLM refuses it unless started with a tool parser), the JSON checks send
``response_format``. A refusal whose text is known gets its fix from
:mod:`tracebound.llm.server_hints`; a 200 whose tool call sits in ``content``
means the server's tool parser is not firing, which no error would ever show.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import openai
from openai.types.chat import ChatCompletion

from tracebound.llm import server_hints
from tracebound.llm.probe_report import Check
from tracebound.llm.settings import LLMSettings

PROBE_TOOL_NAME = "report_word"
PROBE_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": PROBE_TOOL_NAME,
        "description": "Report one word.",
        "parameters": {
            "type": "object",
            "properties": {"word": {"type": "string"}},
            "required": ["word"],
        },
    },
}
PROBE_SCHEMA: dict[str, Any] = {
    "name": "probe_reply",
    "strict": True,
    "schema": {
        "type": "object",
        "properties": {"ok": {"type": "boolean"}},
        "required": ["ok"],
        "additionalProperties": False,
    },
}
SAY_PONG = [{"role": "user", "content": "Reply with the single word pong."}]
CALL_TOOL = [
    {
        "role": "user",
        "content": f'Call the function {PROBE_TOOL_NAME} with word "ping". Do not reply in text.',
    }
]
SAY_JSON = [
    {"role": "user", "content": 'Reply with the JSON object {"ok": true} and nothing else.'}
]
TOOL_TEXT_MARKERS = (PROBE_TOOL_NAME, "<tool_call>", '"arguments"')


@dataclass(frozen=True)
class Refusal:
    """A request the server did not answer with a completion."""

    detail: str
    hint: server_hints.Hint | None
    down: bool


class ChatChecks:
    """The chat-completion checks against one endpoint (no retries: a probe reports)."""

    def __init__(self, client: openai.OpenAI, settings: LLMSettings) -> None:
        self.client = client
        self.settings = settings

    def _create(self, messages: list[dict[str, Any]], **extra: Any) -> ChatCompletion | Refusal:
        try:
            wire: Any = messages
            completion: ChatCompletion = self.client.chat.completions.create(
                model=self.settings.model, messages=wire, **extra
            )
        except (openai.APITimeoutError, openai.APIConnectionError) as exc:
            what = "timed out" if isinstance(exc, openai.APITimeoutError) else "connection failed"
            return Refusal(what, None, down=True)
        except openai.APIStatusError as exc:
            message = server_hints.error_message(exc)
            hint = server_hints.match(message)
            down = exc.status_code >= 500 and hint is None
            return Refusal(f"HTTP {exc.status_code}: {message}", hint, down)
        except (openai.OpenAIError, ValueError):
            return Refusal("the reply was not a chat completion", None, down=False)
        return completion

    def _refused(self, name: str, refusal: Refusal, fix: str, *, required: bool = True) -> Check:
        """A check failed by a refusal; a known refusal brings its own cause and fix."""
        if refusal.hint is not None:
            detail = f"{refusal.hint.cause} ({refusal.detail})"
            fix = refusal.hint.fix
        else:
            detail = f"refused: {refusal.detail}"
        if refusal.down:
            fix = "the endpoint did not answer; retry when the server is up"
        return Check(name, "fail" if required else "warn", detail, fix, down=refusal.down)

    def temperature(self) -> Check:
        value = self.settings.temperature
        if value is None:
            return Check("temperature", "ok", "no temperature is sent")
        reply = self._create(SAY_PONG, temperature=value)
        if isinstance(reply, Refusal):
            return self._refused("temperature", reply, server_hints.TEMPERATURE_FIX)
        return Check("temperature", "ok", f"temperature={value:g} accepted")

    def max_tokens(self) -> Check:
        """The reply limit under the configured field name: every role call sends it."""
        field = self.settings.max_tokens_field
        reply = self._create(SAY_PONG, **{field: 16})
        if isinstance(reply, Refusal):
            return self._refused("max_tokens", reply, server_hints.MAX_TOKENS_FIX)
        return Check("max_tokens", "ok", f"{field} accepted")

    def tool_calling(self) -> Check:
        reply = self._create(CALL_TOOL, tools=[PROBE_TOOL], tool_choice="auto")
        if isinstance(reply, Refusal):
            fix = f"{server_hints.VLLM_TOOL_FIX}; {server_hints.LLAMA_CPP_TOOL_FIX}"
            return self._refused("tool_calling", reply, fix)
        message = reply.choices[0].message if reply.choices else None
        if message is None:
            return Check("tool_calling", "fail", "the reply had no message", "check the server")
        names: list[str] = []
        for call in message.tool_calls or ():
            function = getattr(call, "function", None)  # custom tool calls have none
            if function is not None:
                names.append(str(function.name))
        if PROBE_TOOL_NAME in names:
            return Check("tool_calling", "ok", f"the model called {PROBE_TOOL_NAME}")
        content = message.content if isinstance(message.content, str) else ""
        if any(marker in content for marker in TOOL_TEXT_MARKERS):
            detail = (
                "the tool call came back as text in content, not as tool_calls: "
                f"{server_hints.clean(content, 120)}"
            )
            return Check("tool_calling", "fail", detail, server_hints.TOOL_IN_CONTENT_FIX)
        if names:
            detail = f"the model called {', '.join(names)} instead of {PROBE_TOOL_NAME}"
            return Check("tool_calling", "warn", detail, "use a model trained for tool calling")
        detail = "the model answered in text instead of calling the tool"
        return Check("tool_calling", "warn", detail, "use a model trained for tool calling")

    def _json_reply(self, name: str, response_format: dict[str, Any], required: bool) -> Check:
        reply = self._create(SAY_JSON, response_format=response_format)
        kind = response_format["type"]
        if isinstance(reply, Refusal):
            fix = f"leave {kind} off for this server, or use a server that accepts it"
            return self._refused(name, reply, fix, required=required)
        message = reply.choices[0].message if reply.choices else None
        content = message.content if message is not None and message.content else ""
        try:
            parsed = json.loads(content)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            return Check(name, "ok", f"response_format {kind} accepted; the reply is JSON")
        detail = (
            f"response_format {kind} accepted, but the reply is not a JSON object: "
            f"{server_hints.clean(content, 80)}"
        )
        return Check(name, "warn", detail, "check the model's chat template and JSON support")

    def json_mode(self) -> Check:
        return self._json_reply("json_mode", {"type": "json_object"}, required=True)

    def json_schema(self) -> Check:
        fmt = {"type": "json_schema", "json_schema": PROBE_SCHEMA}
        return self._json_reply("json_schema", fmt, required=False)


__all__ = ["PROBE_TOOL", "PROBE_TOOL_NAME", "ChatChecks", "Refusal"]
