"""The ingest's span for each run it starts: the root of the run's trace in the roles.

The request is published inside this span, so its record carries the span's W3C
headers and the planner's step becomes its child. The request also names the
trace id itself (``DiagnosisRequested.trace_id``): headers are not projected, and
the trace page links a run to its trace from the read model.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from tracebound.events import DiagnosisRequested
from tracebound.tracing import Span, span, trace_id_of


@contextmanager
def run_span(request: DiagnosisRequested) -> Iterator[tuple[DiagnosisRequested, Span]]:
    """``request`` stamped with the trace id of a new child span (unchanged when off)."""
    attributes = {
        "tracebound.role": "ingest",
        "tracebound.run_id": request.run_id,
        "tracebound.mode": request.request.mode,
    }
    with span("ingest run", attributes) as current:
        trace_id = trace_id_of(current.carrier())
        if trace_id is not None:
            request = request.model_copy(update={"trace_id": trace_id})
        yield request, current


__all__ = ["run_span"]
