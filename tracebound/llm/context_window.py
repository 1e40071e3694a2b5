"""How large a context the server really gives the model, where the server says so.

There is no OpenAI-compatible field for it; each server tells in its own place:
vLLM (and SGLang) add ``max_model_len`` to the ``/v1/models`` entry, llama.cpp
server reports ``n_ctx`` under ``default_generation_settings`` of ``GET /props``,
and Ollama keeps ``num_ctx`` in the model's parameters (``POST /api/show``) — when
a model sets none, Ollama runs it with the server default (``OLLAMA_CONTEXT_LENGTH``,
4096 on small machines) whatever the model was trained for, and cuts longer prompts
without an error. A prompt sized for a larger window than the server's is silently
truncated, so the probe compares the two.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

OLLAMA_DEFAULT_CONTEXT = 4096
_NUM_CTX = re.compile(r"^\s*num_ctx\s+(\d+)\s*$", re.MULTILINE)
MAX_NATIVE_BYTES = 1 << 20  # a /props or /api/show body larger than this is not read


@dataclass(frozen=True)
class ServerWindow:
    """The window found, where it came from, and what to change to move it."""

    tokens: int | None
    source: str
    server_setting: str
    note: str = ""
    assumed: bool = False  # a documented default, not a figure the server reported


def _positive_int(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and value > 0:
        return value
    return None


def server_root(base_url: str) -> str:
    """``http://host:8000/v1`` → ``http://host:8000``: where the native endpoints live."""
    root = base_url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


def _json(response: httpx.Response) -> Mapping[str, Any] | None:
    if response.status_code != 200 or len(response.content) > MAX_NATIVE_BYTES:
        return None
    try:
        body = response.json()
    except ValueError:
        return None
    return body if isinstance(body, Mapping) else None


def from_listing(entry: Mapping[str, Any]) -> ServerWindow | None:
    """vLLM / SGLang: ``max_model_len`` on the model's ``/v1/models`` entry."""
    tokens = _positive_int(entry.get("max_model_len"))
    if tokens is None:
        return None
    return ServerWindow(tokens, "max_model_len in /v1/models (vLLM)", "vLLM --max-model-len")


def from_llama_cpp(http: httpx.Client, root: str) -> ServerWindow | None:
    """llama.cpp server: ``default_generation_settings.n_ctx`` of ``GET /props``."""
    body = _json(http.get(f"{root}/props"))
    settings = body.get("default_generation_settings") if body else None
    tokens = _positive_int(settings.get("n_ctx")) if isinstance(settings, Mapping) else None
    if tokens is None:
        return None
    slots = _positive_int(body.get("total_slots")) if body else None
    note = f"per slot, {slots} slot(s): -c is shared between the -np slots" if slots else ""
    return ServerWindow(
        tokens, "n_ctx in /props (llama.cpp server)", "llama-server -c/--ctx-size", note
    )


def from_ollama(http: httpx.Client, root: str, model: str) -> ServerWindow | None:
    """Ollama: ``num_ctx`` of the model's parameters, else the server default."""
    body = _json(http.post(f"{root}/api/show", json={"model": model}))
    if body is None or ("model_info" not in body and "parameters" not in body):
        return None
    setting = "Ollama OLLAMA_CONTEXT_LENGTH, or PARAMETER num_ctx in a Modelfile"
    parameters = body.get("parameters")
    found = _NUM_CTX.search(parameters) if isinstance(parameters, str) else None
    if found:
        return ServerWindow(int(found.group(1)), "num_ctx of the model (Ollama)", setting)
    trained = None
    info = body.get("model_info")
    if isinstance(info, Mapping):
        for key, value in info.items():
            if str(key).endswith(".context_length"):
                trained = _positive_int(value)
    note = f"the model was trained for {trained} tokens; " if trained else ""
    note += (
        "no num_ctx is set, so the server default applies "
        f"({OLLAMA_DEFAULT_CONTEXT} unless OLLAMA_CONTEXT_LENGTH is set)"
    )
    return ServerWindow(
        OLLAMA_DEFAULT_CONTEXT,
        "Ollama server default (no num_ctx on the model)",
        setting,
        note,
        assumed=True,
    )


def discover(
    http: httpx.Client, base_url: str, model: str, entry: Mapping[str, Any] | None
) -> ServerWindow | None:
    """Ask each server kind in turn; ``None`` when no server says."""
    if entry is not None:
        found = from_listing(entry)
        if found is not None:
            return found
    root = server_root(base_url)
    asks: tuple[Callable[[], ServerWindow | None], ...] = (
        lambda: from_llama_cpp(http, root),
        lambda: from_ollama(http, root, model),
    )
    for ask in asks:
        try:
            found = ask()
        except httpx.HTTPError:
            found = None
        if found is not None:
            return found
    return None


__all__ = ["OLLAMA_DEFAULT_CONTEXT", "ServerWindow", "discover", "server_root"]
