"""W3C trace context in Kafka record headers, without the OpenTelemetry SDK.

A run's records carry ``traceparent`` (and ``tracestate`` when there is one) as
headers, so every role can continue the trace of its input. Headers are bytes
anyone producing to a topic may set, so they are read strictly: a value that is
not a well-formed ``traceparent`` is ignored, and ``tracestate`` is capped,
before any of it reaches a span or a log.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

TRACEPARENT = "traceparent"
TRACESTATE = "tracestate"
MAX_TRACESTATE = 512  # the W3C limit: 32 members of at most 256 characters is more
Carrier = dict[str, str]
Headers = list[tuple[str, str | bytes | None]]  # as librdkafka takes them

_TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")
_ZERO_TRACE, _ZERO_SPAN = "0" * 32, "0" * 16


def valid_traceparent(value: str) -> bool:
    """A version-00 ``traceparent`` with a non-zero trace id and parent id."""
    match = _TRACEPARENT.match(value)
    return match is not None and match[1] != _ZERO_TRACE and match[2] != _ZERO_SPAN


def trace_id_of(carrier: Mapping[str, str]) -> str | None:
    """The 32-hex trace id of a carrier's ``traceparent``, if it has a valid one."""
    value = carrier.get(TRACEPARENT, "")
    return value[3:35] if valid_traceparent(value) else None


def carrier_of(pairs: Iterable[tuple[str, str | bytes | None]] | None) -> Carrier:
    """The trace context among record or HTTP headers; empty when there is none.

    Header names are compared case-insensitively (HTTP); only the two W3C headers
    are kept, and only when the ``traceparent`` is valid.
    """
    found: Carrier = {}
    for name, raw in pairs or ():
        key = name.lower()
        if key not in (TRACEPARENT, TRACESTATE) or raw is None or key in found:
            continue
        text = raw.decode("ascii", "replace") if isinstance(raw, bytes) else raw
        found[key] = text.strip()
    if not valid_traceparent(found.get(TRACEPARENT, "")):
        return {}
    state = found.get(TRACESTATE, "")
    if not state or len(state) > MAX_TRACESTATE or not state.isprintable():
        found.pop(TRACESTATE, None)
    return found


def record_headers(carrier: Mapping[str, str]) -> Headers | None:
    """The Kafka headers of an outgoing record (None without a trace context)."""
    if not carrier:
        return None
    return [(name, value.encode("ascii")) for name, value in carrier.items()]


__all__ = [
    "TRACEPARENT",
    "TRACESTATE",
    "Carrier",
    "Headers",
    "carrier_of",
    "record_headers",
    "trace_id_of",
    "valid_traceparent",
]
