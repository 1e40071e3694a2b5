"""Probe the configured model endpoint: what works, and what setting or flag is missing.

A role in ``llm`` mode falls back to its rules implementation on every model
failure, so a server that refuses every request (tools without a tool parser, a
temperature an o-series model does not take) still yields answers and looks
healthy. The probe asks the server the few questions that decide whether the
roles can work — is it there, does it serve the model, does it call tools, does
it do JSON mode, does it take our parameters, how large is its context — with
tiny requests through the same ``openai`` client the roles use, and turns each
refusal into a cause and a fix (:mod:`tracebound.llm.server_hints`).
``tracebound doctor`` prints the whole report; each llm role runs the start-up
subset when it starts (:mod:`tracebound.llm.readiness`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

import httpx
import openai

from tracebound.llm import context_window
from tracebound.llm.budget import estimate_messages, family_for
from tracebound.llm.chat_checks import ChatChecks
from tracebound.llm.probe_report import Check, ProbeReport
from tracebound.llm.server_hints import clean, error_message
from tracebound.llm.settings import LLMSettings
from tracebound.llm.tokens import ServerTokenizer

MAX_LISTED = 10  # model names quoted back when the configured one is missing
SERVER_STATE_TIMEOUT_S = 3.0  # llama-server answers /health and /slots even while busy

# Checks no role's start-up check runs: parameters the roles never send.
# The start-up check leaves out only what the roles do not send by default: a JSON
# schema (sent when TRACEBOUND_LLM_RESPONSE_FORMAT=json_schema; `doctor` checks it).
STARTUP_SKIPS = frozenset({"json_schema", "tokenizer"})


def safe_target(base_url: str) -> str:
    """The endpoint without credentials or query: safe to print and to log."""
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}".rstrip("/")


class EndpointProbe:
    """One probe run against one endpoint; ``run()`` returns the report."""

    def __init__(
        self,
        settings: LLMSettings,
        *,
        client: openai.OpenAI | None = None,
        http: httpx.Client | None = None,
        skip: frozenset[str] = frozenset(),
    ) -> None:
        self.settings = settings
        self.target = safe_target(settings.base_url or "")
        self.skip = skip
        key = settings.api_key.get_secret_value()
        self.client = client or openai.OpenAI(
            base_url=settings.base_url, api_key=key, timeout=settings.timeout_s, max_retries=0
        )
        self.http = http or httpx.Client(
            timeout=settings.timeout_s, headers={"Authorization": f"Bearer {key}"}
        )

    def run(self) -> ProbeReport:
        checks = self._checks()
        return ProbeReport(self.target, self.settings.model, tuple(checks))

    def _checks(self) -> list[Check]:
        reachable, entries = self._list_models()
        if reachable.status == "fail" and reachable.down:
            state = self._busy_or_loading()
            if state is not None:  # alive: a busy or loading server is not a down one
                return [_alive("reachable", reachable, state), *_skipped(f"the server is {state}")]
        checks = [reachable]
        if reachable.status == "fail":
            return checks + _skipped("GET /models failed")
        model, entry = self._model(entries)
        checks.append(model)
        if model.status == "fail":
            return checks + _skipped("the configured model is not served")
        chat = ChatChecks(self.client, self.settings)
        steps: list[tuple[str, Callable[[], Check]]] = [
            ("temperature", chat.temperature),
            ("max_tokens", chat.max_tokens),
            ("tool_calling", chat.tool_calling),
            ("json_mode", chat.json_mode),
            ("json_schema", chat.json_schema),
            ("context_window", lambda: self._context_window(entry)),
            ("tokenizer", self._tokenizer),
        ]
        for name, step in steps:
            if name in self.skip:
                continue
            check = step()
            if check.status == "fail" and check.down:
                state = self._busy_or_loading()
                check = _alive(name, check, state) if state is not None else check
            checks.append(check)
        return checks

    def _busy_or_loading(self) -> str | None:
        """``loading`` or ``busy`` when llama-server says so (``/health``, ``/slots``), else None.

        A single-slot server working on a long prompt answers nothing else until it is
        done, and one loading its model answers 503: both are alive, not down.
        """
        root = context_window.server_root(self.settings.base_url or "")
        try:
            health = self.http.get(f"{root}/health", timeout=SERVER_STATE_TIMEOUT_S)
            if health.status_code == 503 and "loading" in health.text.lower():
                return "loading"
            reply = self.http.get(f"{root}/slots", timeout=SERVER_STATE_TIMEOUT_S)
            slots = reply.json() if reply.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            return None
        if isinstance(slots, list) and slots:
            working = [s for s in slots if isinstance(s, Mapping) and s.get("is_processing")]
            if len(working) == len(slots):
                return "busy"
        return None

    def _list_models(self) -> tuple[Check, list[Mapping[str, Any]]]:
        where = f"GET {self.target}/models"
        try:
            page = self.client.models.list()
            entries: list[Mapping[str, Any]] = [
                {**(item.model_extra or {}), "id": item.id} for item in getattr(page, "data", [])
            ]
        except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
            fix = "set TRACEBOUND_LLM_API_KEY to a key the server accepts (vLLM: its --api-key)"
            detail = f"the server refused the API key (HTTP {exc.status_code})"
            return Check("reachable", "fail", detail, fix), []
        except openai.NotFoundError:
            fix = (
                "TRACEBOUND_LLM_BASE_URL must be the API root, usually ending in /v1 (vLLM "
                "http://host:8000/v1, Ollama http://host:11434/v1, llama.cpp http://host:8080/v1)"
            )
            detail = f"{where} answered 404: the base URL is not an OpenAI-compatible API"
            return Check("reachable", "fail", detail, fix), []
        except (openai.APITimeoutError, openai.APIConnectionError) as exc:
            what = "timed out" if isinstance(exc, openai.APITimeoutError) else "could not connect"
            fix = "start the model server, or correct TRACEBOUND_LLM_BASE_URL"
            return Check("reachable", "fail", f"{where}: {what}", fix, down=True), []
        except openai.APIStatusError as exc:
            detail = f"{where} answered HTTP {exc.status_code}: {error_message(exc)}"
            down = exc.status_code >= 500
            return Check("reachable", "fail", detail, "check the server's log", down=down), []
        except (openai.OpenAIError, ValueError, TypeError, AttributeError):
            detail = f"{where} answered, but not with an OpenAI model list"
            return Check("reachable", "fail", detail, "point TRACEBOUND_LLM_BASE_URL at it"), []
        return Check("reachable", "ok", f"{where} answered ({len(entries)} models)"), entries

    def _model(self, entries: list[Mapping[str, Any]]) -> tuple[Check, Mapping[str, Any] | None]:
        wanted = self.settings.model
        for entry in entries:
            if entry.get("id") == wanted:
                return Check("model", "ok", f"the server serves {wanted!r}"), entry
        if not entries:
            return Check("model", "warn", "the server lists no models; cannot confirm it"), None
        names = ", ".join(clean(str(e.get("id")), 80) for e in entries[:MAX_LISTED])
        more = f" and {len(entries) - MAX_LISTED} more" if len(entries) > MAX_LISTED else ""
        detail = f"{wanted!r} is not served; the server lists: {names}{more}"
        fix = (
            "set TRACEBOUND_LLM_MODEL to one of them (vLLM: its --served-model-name; "
            "Ollama: a pulled model)"
        )
        return Check("model", "fail", detail, fix), None

    def _context_window(self, entry: Mapping[str, Any] | None) -> Check:
        configured = self.settings.context_window
        base_url = self.settings.base_url or ""
        window = context_window.discover(self.http, base_url, self.settings.model, entry)
        if window is None or window.tokens is None:
            detail = f"unknown: the server does not report it (configured {configured})"
            fix = (
                "set TRACEBOUND_LLM_CONTEXT_WINDOW to the server's window (vLLM "
                "--max-model-len, llama-server -c, Ollama num_ctx / OLLAMA_CONTEXT_LENGTH)"
            )
            return Check("context_window", "warn", detail, fix)
        seen = f"{window.tokens} tokens ({window.source})"
        if window.note:
            seen += f"; {window.note}"
        if window.tokens >= configured:
            return Check("context_window", "ok", f"{seen}, configured {configured}")
        detail = (
            f"{seen} is smaller than TRACEBOUND_LLM_CONTEXT_WINDOW={configured}: "
            "longer prompts are cut by the server"
        )
        fix = (
            f"set TRACEBOUND_LLM_CONTEXT_WINDOW={window.tokens}, or raise "
            f"{window.server_setting} to at least {configured}"
        )
        return Check("context_window", "warn" if window.assumed else "fail", detail, fix)

    def _tokenizer(self) -> Check:
        """Whether prompts are sized by the server's count, and how far the estimate is off."""
        settings = self.settings
        estimate = estimate_messages(SAMPLE, None, family_for(settings.model))
        if not settings.server_tokenizer:
            detail = "off (TRACEBOUND_LLM_SERVER_TOKENIZER=false): prompts are estimated"
            return Check("tokenizer", "ok", detail)
        counter = ServerTokenizer(settings.base_url or "", settings.model, self.http)
        counted = counter.count(SAMPLE, None)
        if counted is None:
            detail = (
                "the server counts no tokens (/tokenize): prompts are estimated, and the"
                " estimate is calibrated by every reply's usage.prompt_tokens"
            )
            return Check("tokenizer", "ok", detail)
        ratio = counted / estimate
        detail = (
            f"{counter.kind} counts prompts: {counted} tokens for a sample the estimate gives"
            f" {estimate} (ratio {ratio:.2f})"
        )
        return Check("tokenizer", "ok", detail)

    def close(self) -> None:
        self.client.close()
        self.http.close()


# A prompt like the roles send: instructions, ids, JSON, numbers and Chinese.
SAMPLE = (
    {"role": "system", "content": "You verify claims against evidence. Answer in JSON only."},
    {
        "role": "user",
        "content": '{"run_id": "6f1c2a7e-94b3-4d2e-8a51-0c9e7f3b2d14", "claims": [{"text":'
        ' "payment-service CPU 92% > 80% for 25m", "raw_path": "$.alerts[0]"}],'
        ' "query": "payment-service 当前是否有 HighCPUUsage 告警？"}',
    },
)


def _alive(name: str, failed: Check, state: str) -> Check:
    """A check that timed out on a busy or loading server: a warning, not a failure."""
    detail = f"{failed.detail}; the server is {state} (every slot working, or the model loading)"
    fix = (
        "nothing is wrong: calls wait for a free slot; add slots (llama-server -np) "
        "or raise TRACEBOUND_LLM_TIMEOUT_CEILING_S if calls time out"
    )
    return Check(name, "warn", detail, fix)


def _skipped(reason: str) -> list[Check]:
    return [Check("checks", "skip", f"the other checks did not run: {reason}")]


def probe_endpoint(settings: LLMSettings, *, skip: frozenset[str] = frozenset()) -> ProbeReport:
    """Run every check but those named in ``skip`` and return the report."""
    if not settings.configured:
        check = Check(
            "configured",
            "fail",
            "TRACEBOUND_LLM_BASE_URL is not set: every role runs its rules implementation",
            "set TRACEBOUND_LLM_BASE_URL to the server's OpenAI-compatible API (ending in /v1)",
        )
        return ProbeReport("", settings.model, (check,))
    probe = EndpointProbe(settings, skip=skip)
    try:
        return probe.run()
    finally:
        probe.close()


__all__ = [
    "STARTUP_SKIPS",
    "Check",
    "EndpointProbe",
    "ProbeReport",
    "probe_endpoint",
    "safe_target",
]
