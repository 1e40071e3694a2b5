"""Distributed tracing of a run across the roles: off unless an OTLP endpoint is set.

A process calls :func:`configure` once at start. Without
``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) it keeps
:data:`NO_TRACING`, whose spans are one shared object doing nothing, and the
OpenTelemetry SDK is never imported; the service loop checks
:attr:`Tracing.enabled` once per batch and takes its untraced path. With an
endpoint, :mod:`tracebound.tracing.otel` exports spans over OTLP/HTTP through a
batch span processor.

Spans carry short ids and enumerations only (run id, role, mode, verdict, model
and tool names); never prompts, alert text, tool output or credentials.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import Protocol

from tracebound.tracing.context import Carrier, Headers, carrier_of, record_headers, trace_id_of

Attributes = Mapping[str, str | int | bool]
ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")


class Span(Protocol):
    """A span being recorded: attributes may be added until it ends."""

    def set(self, attributes: Attributes) -> None: ...

    def carrier(self) -> Carrier:
        """The W3C headers naming this span as the parent of what it produces."""
        ...


class Tracing(Protocol):
    enabled: bool

    def step(
        self, name: str, parent: Carrier, attributes: Attributes
    ) -> AbstractContextManager[Span]:
        """A context manager: one role step, continuing the trace of ``parent``."""
        ...

    def span(self, name: str, attributes: Attributes) -> AbstractContextManager[Span]:
        """A context manager: a child of the current span (a model or tool call)."""
        ...

    def current(self) -> Carrier:
        """The W3C headers of the current span: what a record published now carries."""
        ...

    def shutdown(self) -> None:
        """Export what is still queued; called once when the process stops."""
        ...


class _NoSpan:
    def set(self, attributes: Attributes) -> None:
        return None

    def carrier(self) -> Carrier:
        return {}


NO_SPAN = _NoSpan()


class _NoTracing:
    enabled = False

    @contextmanager
    def step(self, name: str, parent: Carrier, attributes: Attributes) -> Iterator[Span]:
        yield NO_SPAN

    @contextmanager
    def span(self, name: str, attributes: Attributes) -> Iterator[Span]:
        yield NO_SPAN

    def current(self) -> Carrier:
        return {}

    def shutdown(self) -> None:
        return None


NO_TRACING: Tracing = _NoTracing()
_active: Tracing = NO_TRACING


def endpoint_configured(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the standard OTLP variables ask for traces to be exported."""
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if env.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower() == "none":
        return False
    return any(env.get(name, "").strip() for name in ENDPOINT_VARIABLES)


def configure(service: str) -> Tracing:
    """Set up this process's tracing for ``service``; a no-op without an endpoint."""
    global _active  # noqa: PLW0603 - one tracer provider per process, like the SDK's own
    if endpoint_configured() and not _active.enabled:
        from tracebound.tracing.otel import OtelTracing  # noqa: PLC0415 - only when enabled

        _active = OtelTracing(service)
    return _active


def active() -> Tracing:
    """The process's tracing (:data:`NO_TRACING` until :func:`configure` enabled it)."""
    return _active


def span(name: str, attributes: Attributes) -> AbstractContextManager[Span]:
    """A child span of the current step, e.g. around a model or tool call."""
    return _active.span(name, attributes)


def current_headers() -> Headers | None:
    """The Kafka headers for a record published inside the current span (None when off)."""
    return record_headers(_active.current()) if _active.enabled else None


def shutdown() -> None:
    _active.shutdown()


__all__ = [
    "NO_SPAN",
    "NO_TRACING",
    "Attributes",
    "Carrier",
    "Span",
    "Tracing",
    "active",
    "carrier_of",
    "configure",
    "current_headers",
    "endpoint_configured",
    "record_headers",
    "shutdown",
    "span",
    "trace_id_of",
]
