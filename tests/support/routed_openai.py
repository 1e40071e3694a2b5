"""The scripted OpenAI-compatible server for a whole pipeline in ``llm`` mode.

Several roles and runs share one endpoint there and their requests interleave,
so a queue of scripted entries cannot say which answer goes where: this server
asks a responder, which picks the entry from what was asked (the role's prompt,
a marker in the question, the tool results so far).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from tests.support.fake_openai import Entry, FakeOpenAI, RecordedRequest

RoutedResponder = Callable[[RecordedRequest], Entry]


class RoutedFakeOpenAI(FakeOpenAI):
    """The scripted server answering each request with ``respond(request)``.

    For a whole pipeline in ``llm`` mode, where several roles and runs share one
    endpoint and their requests interleave: the responder picks the entry from
    what was asked (the role's prompt, a marker in the question, the tool
    results so far). Scripted entries, if any, still go first.
    """

    def __init__(self, respond: RoutedResponder) -> None:
        super().__init__(responder=self._route)
        self.respond = respond
        self._asked = threading.local()

    def _record(self, request: RecordedRequest) -> None:
        super()._record(request)
        self._asked.request = request  # the handler thread records, then asks _next

    def _route(self, _body: Mapping[str, Any]) -> Entry:
        return self.respond(self._asked.request)


__all__ = ["RoutedFakeOpenAI", "RoutedResponder"]
