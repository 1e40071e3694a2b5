"""A scripted OpenAI-compatible HTTP server for testing the ``llm`` role implementations.

It speaks the real wire format of ``POST /v1/chat/completions`` on 127.0.0.1, so
the unmodified ``openai`` client — its HTTP stack, retries, timeouts and
response parsing — runs against it. Each request takes the next scripted entry
(a text or tool-call completion, an HTTP error status, a delay, a dropped
connection, an empty ``choices`` list); when the queue is empty the ``responder``
(a function of the request body, for replies that depend on what was asked) or
else the ``default`` entry answers. Requests are served on a thread each, so
concurrent clients wait on their own delays, not on each other's. Every request
body is recorded (unless ``record`` is off, for long runs) so tests can assert on
what was sent.

    with FakeOpenAI() as server:
        server.script(text("hello", prompt_tokens=12, completion_tokens=3))
        settings = LLMSettings(base_url=server.base_url)
"""

from __future__ import annotations

import itertools
import json
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

COMPLETIONS_PATH = "/v1/chat/completions"
MODELS_PATH = "/v1/models"
DEFAULT_MODELS = ("gpt-4o-mini",)  # the model name LLMSettings defaults to
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


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", []))

    @property
    def tools(self) -> list[dict[str, Any]] | None:
        return self.body.get("tools")


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


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    # Every reply closes its connection (HTTP/1.0), so a burst of concurrent clients
    # connects at once; the default backlog of 5 would drop and delay their connects.
    request_queue_size = 256
    fake: FakeOpenAI

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients that time out and hang up are part of the script; stay quiet."""


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """No access log on stderr during tests."""

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = {"_unparseable": raw.decode("utf-8", "replace")}
        fake = self.server.fake
        if self.path != COMPLETIONS_PATH:
            self._send(Entry(status=404, body={"error": {"message": "unknown path"}}), body)
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        fake._record(RecordedRequest(self.path, headers, body))
        self._send(fake._next(body), body)

    def do_GET(self) -> None:
        """``GET /v1/models`` lists the served models; other GETs are configured bodies."""
        fake = self.server.fake
        if fake.api_key is not None and self.headers.get("Authorization") != (
            f"Bearer {fake.api_key}"
        ):
            error = {"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}}
            self._send(Entry(status=401, body=error), {})
        elif self.path == MODELS_PATH:
            self._send(Entry(body=fake.listing()), {})
        elif self.path in fake.get_bodies:
            self._send(Entry(body=fake.get_bodies[self.path]), {})
        else:
            self._send(Entry(status=404, body={"error": {"message": "unknown path"}}), {})

    def _send(self, entry: Entry, request: Mapping[str, Any]) -> None:
        fake = self.server.fake
        if entry.delay_s:
            if fake._stopping.wait(entry.delay_s):
                self.close_connection = True
                return
            entry = entry.then or fake.default
        if entry.drop:
            self.close_connection = True
            return
        payload = dict(entry.body or {})
        if payload.get("model") == "":
            payload["model"] = str(request.get("model", "fake-model"))
        data = entry.raw if entry.raw is not None else json.dumps(payload).encode()
        try:
            self.send_response(entry.status)
            self.send_header("Content-Type", entry.content_type)
            self.send_header("Content-Length", str(len(data)))
            for key, value in entry.headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)
        except OSError:  # the client gave up (timeout) and closed its end
            self.close_connection = True


Responder = Callable[[Mapping[str, Any]], Entry]


class FakeOpenAI:
    """The scripted server; use as a context manager."""

    def __init__(
        self,
        default: Entry | None = None,
        *,
        models: Sequence[str] = DEFAULT_MODELS,
        model_extra: Mapping[str, Any] | None = None,
        responder: Responder | None = None,
        record: bool = True,
        get_bodies: Mapping[str, Mapping[str, Any]] | None = None,
        api_key: str | None = None,
    ) -> None:
        self.default = default or text("fake-openai: script exhausted")
        # A server "configuration": what /v1/models lists (with extra fields such as
        # vLLM's max_model_len), other GET bodies (llama.cpp's /props), and a responder
        # that answers by the request's content once the script is used up.
        self.models = tuple(models)
        self.model_extra = dict(model_extra or {})
        self.responder = responder
        self.record = record
        self.served = 0
        self.get_bodies = dict(get_bodies or {})
        self.api_key = api_key  # when set, GETs without this bearer key answer 401
        self.requests: list[RecordedRequest] = []
        self._queue: deque[Entry] = deque()
        self._matched: list[tuple[Callable[[Mapping[str, Any]], bool], deque[Entry]]] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def script(self, *entries: Entry | Iterable[Entry]) -> FakeOpenAI:
        """Append entries (or iterables of entries) to the queue."""
        with self._lock:
            for entry in entries:
                if isinstance(entry, Entry):
                    self._queue.append(entry)
                else:
                    self._queue.extend(entry)
        return self

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("FakeOpenAI is not running")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def script_for(self, match: Callable[[Mapping[str, Any]], bool], *entries: Entry) -> FakeOpenAI:
        """Entries only requests whose body satisfies ``match`` take, in order, before the queue.

        A process under test may send requests the script does not expect (a
        start-up probe, another role); those then get the queue or the default,
        and the matched conversation still sees its own replies in order.
        """
        with self._lock:
            self._matched.append((match, deque(entries)))
        return self

    def _next(self, request: Mapping[str, Any]) -> Entry:
        with self._lock:
            for match, queue in self._matched:
                if queue and match(request):
                    return queue.popleft()
            if self._queue:
                return self._queue.popleft()
        return self.responder(request) if self.responder is not None else self.default

    def listing(self) -> dict[str, Any]:
        """The ``GET /v1/models`` body."""
        data = [
            {"id": name, "object": "model", "created": 1_760_000_000, "owned_by": "fake"}
            | self.model_extra
            for name in self.models
        ]
        return {"object": "list", "data": data}

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.served += 1
            if self.record:
                self.requests.append(request)

    def start(self) -> FakeOpenAI:
        server = _Server(("127.0.0.1", 0), _Handler)
        server.fake = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, args=(0.05,), name="fake-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


__all__ = [
    "DEFAULT_MODELS",
    "Entry",
    "FakeOpenAI",
    "RecordedRequest",
    "Responder",
    "close",
    "delay",
    "empty",
    "garbage",
    "status",
    "system_prompt_has",
    "text",
    "thinking",
    "tool_call",
    "tool_calls",
    "tool_calls_as_objects",
    "tool_calls_in_content",
    "truncated",
]
