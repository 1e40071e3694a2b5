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

import json
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from tests.support.openai_replies import (
    Entry,
    close,
    delay,
    empty,
    garbage,
    models_listing,
    status,
    system_prompt_has,
    text,
    thinking,
    tool_call,
    tool_calls,
    tool_calls_as_objects,
    tool_calls_in_content,
    truncated,
)

COMPLETIONS_PATH = "/v1/chat/completions"
MODELS_PATH = "/v1/models"
DEFAULT_MODELS = ("gpt-4o-mini",)  # the model name LLMSettings defaults to


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
        return models_listing(self.models, self.model_extra)

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.served += 1
            if self.record:
                self.requests.append(request)

    def start(self) -> FakeOpenAI:
        server = _Server(("127.0.0.1", 0), _Handler)
        server.fake = self
        self._server = server
        # stop() waits for the serving loop to notice: a short poll keeps teardown quick
        self._thread = threading.Thread(
            target=server.serve_forever, args=(0.01,), name="fake-openai", daemon=True
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


# The reply builders are used through this module too: ``fake.text(...)``.
__all__ = [
    "COMPLETIONS_PATH",
    "DEFAULT_MODELS",
    "MODELS_PATH",
    "Entry",
    "FakeOpenAI",
    "RecordedRequest",
    "Responder",
    "close",
    "delay",
    "empty",
    "garbage",
    "models_listing",
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
