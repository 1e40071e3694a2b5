"""The OpenTelemetry SDK behind :class:`~tracebound.tracing.Tracing`, imported only when on.

Spans leave through a batch span processor to the OTLP/HTTP exporter, which reads
its endpoint, headers, timeout and compression from the standard
``OTEL_EXPORTER_OTLP_*`` variables; the batch processor reads ``OTEL_BSP_*``. The
service name is ``OTEL_SERVICE_NAME``, else ``tracebound-<service>``. A step's
parent comes from the W3C headers of its input record (or HTTP request) and is
made current on the handler's thread, so model and tool calls below it become its
children without being passed a span.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from tracebound.tracing import Attributes
from tracebound.tracing import Span as SpanPort
from tracebound.tracing.context import Carrier

_PROPAGATOR = TraceContextTextMapPropagator()


class _Span:
    def __init__(self, span: trace.Span) -> None:
        self._span = span

    def set(self, attributes: Attributes) -> None:
        self._span.set_attributes(dict(attributes))

    def carrier(self) -> Carrier:
        carrier: Carrier = {}
        _PROPAGATOR.inject(carrier, context=trace.set_span_in_context(self._span))
        return carrier


class OtelTracing:
    """Spans of one service process, exported over OTLP/HTTP in batches."""

    enabled = True

    def __init__(self, service: str, exporter: SpanExporter | None = None) -> None:
        name = os.environ.get("OTEL_SERVICE_NAME", "").strip() or f"tracebound-{service}"
        self._provider = TracerProvider(resource=Resource.create({SERVICE_NAME: name}))
        self._provider.add_span_processor(BatchSpanProcessor(exporter or OTLPSpanExporter()))
        self._tracer = self._provider.get_tracer("tracebound")

    @contextmanager
    def step(self, name: str, parent: Carrier, attributes: Attributes) -> Iterator[SpanPort]:
        context = _PROPAGATOR.extract(parent) if parent else None
        with self._started(name, SpanKind.CONSUMER, attributes, context) as span:
            yield span

    @contextmanager
    def span(self, name: str, attributes: Attributes) -> Iterator[SpanPort]:
        with self._started(name, SpanKind.CLIENT, attributes, None) as span:
            yield span

    @contextmanager
    def _started(
        self, name: str, kind: SpanKind, attributes: Attributes, context: Context | None
    ) -> Iterator[SpanPort]:
        """A current span; a failure marks it with the exception's type only.

        Exception messages may quote input (an alert's text, a tool's reply), which
        must not leave the process in a span.
        """
        with self._tracer.start_as_current_span(
            name,
            context=context,
            kind=kind,
            attributes=dict(attributes),
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            try:
                yield _Span(span)
            except BaseException as exc:
                span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
                raise

    def current(self) -> Carrier:
        carrier: Carrier = {}
        _PROPAGATOR.inject(carrier)
        return carrier

    def shutdown(self) -> None:
        self._provider.shutdown()


__all__ = ["OtelTracing"]
