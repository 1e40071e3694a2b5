"""Prompt sizes by the server's own count, and an estimate calibrated by its replies.

Why: the per-family estimate (:mod:`tracebound.llm.budget`) is a guess, and for
small models' tokenizers it guesses low (digits, UUIDs and JSON punctuation cost
more tokens than prose). A prompt sent over the server's window is refused or
cut, so the count must come from the server where it can:

- :class:`ServerTokenizer` asks the server to count. llama.cpp's ``llama-server``
  renders the chat template (``POST /apply-template``) and counts the result
  (``POST /tokenize``); vLLM counts a message list itself (``POST /tokenize``).
  A server without these endpoints is asked once and never again.
- :class:`Calibration` learns, per model, how far the estimate fell short: every
  reply's ``usage.prompt_tokens`` over the estimate of what was sent. The ratio
  only grows (a prompt once undercounted must not be undercounted again), starts
  at 1 and is served on ``/metrics`` as ``tracebound_llm_token_ratio``.
"""

from __future__ import annotations

import json
import logging
import math
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import httpx
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from tracebound.llm.context_window import server_root

log = logging.getLogger("tracebound.llm")

TOKENIZE_TIMEOUT_S = 5.0
TOOL_OVERHEAD = 12  # the wire wrapper of one tool spec, as the budget counts it
# llama.cpp renders tools into the template only for some models: count them beside it.
MAX_RATIO = 8.0


class ServerTokenizer:
    """Counts a request's prompt tokens with the server's tokenizer (None: it has none)."""

    def __init__(self, base_url: str, model: str, client: httpx.Client | None = None) -> None:
        self.root = server_root(base_url)
        self.model = model
        self._client = client or httpx.Client(timeout=TOKENIZE_TIMEOUT_S, trust_env=False)
        self._lock = threading.Lock()
        self._kind: str | None = None  # "llama.cpp" | "vllm" | "none", once asked

    @property
    def kind(self) -> str | None:
        """Which way the server counts (None: not asked yet)."""
        return self._kind

    def count(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None
    ) -> int | None:
        """The prompt tokens of ``messages`` and ``tools`` by the server, or None."""
        with self._lock:
            if self._kind is None:
                self._kind = self._probe()
        try:
            if self._kind == "llama.cpp":
                return self._llama(messages, tools)
            if self._kind == "vllm":
                return self._vllm(messages, tools)
        except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
            log.warning("the model server could not count a prompt: %s", type(exc).__name__)
        return None

    def _probe(self) -> str:
        try:
            reply = self._client.post(f"{self.root}/tokenize", json={"content": "probe"})
            if reply.status_code == 200 and isinstance(reply.json().get("tokens"), list):
                return "llama.cpp"
            reply = self._client.post(
                f"{self.root}/tokenize", json={"model": self.model, "prompt": "probe"}
            )
            if reply.status_code == 200 and isinstance(reply.json().get("count"), int):
                return "vllm"
        except (httpx.HTTPError, ValueError, AttributeError):
            pass
        return "none"

    def _tokens(self, text: str) -> int:
        reply = self._client.post(f"{self.root}/tokenize", json={"content": text})
        reply.raise_for_status()
        return len(reply.json()["tokens"])

    def _llama(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None
    ) -> int:
        reply = self._client.post(
            f"{self.root}/apply-template", json={"messages": [dict(m) for m in messages]}
        )
        reply.raise_for_status()
        total = self._tokens(str(reply.json()["prompt"]))
        if tools:
            total += self._tokens(json.dumps(list(tools), ensure_ascii=False))
            total += TOOL_OVERHEAD * len(tools)
        return total

    def _vllm(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None
    ) -> int:
        body: dict[str, Any] = {"model": self.model, "messages": [dict(m) for m in messages]}
        if tools:
            body["tools"] = list(tools)
        reply = self._client.post(f"{self.root}/tokenize", json=body)
        reply.raise_for_status()
        return int(reply.json()["count"])

    def close(self) -> None:
        self._client.close()


class Calibration(Collector):
    """Per model, how many tokens the server counted per estimated token (only grows)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ratios: dict[str, float] = {}

    def ratio(self, model: str) -> float:
        with self._lock:
            return self._ratios.get(model, 1.0)

    def observe(self, model: str, estimated: int, counted: int | None) -> float:
        """Learn from one reply; returns the ratio now in force."""
        with self._lock:
            current = self._ratios.get(model, 1.0)
            if counted and estimated > 0:
                current = min(max(current, counted / estimated), MAX_RATIO)
                self._ratios[model] = current
            return current

    def scaled(self, model: str, estimate: int) -> int:
        return math.ceil(estimate * self.ratio(model))

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            "tracebound_llm_token_ratio",
            "Prompt tokens the server counted per token estimated, per model (only grows)",
            labels=["model"],
        )
        with self._lock:
            for model, ratio in sorted(self._ratios.items()):
                family.add_metric([model], ratio)
        yield family


CALIBRATION = Calibration()

__all__ = ["CALIBRATION", "Calibration", "ServerTokenizer"]
