"""Declared sizes for free text, so no input can make an event Kafka cannot carry.

Every stage carries the request and its own outputs in one Kafka record, and a
record over the producer's ``message.max.bytes`` can never be published. Free
text that comes from outside (alert annotations and labels, log lines, tool
output) is therefore cut to a declared size before it is carried, with a marker
that says how much was cut: a large alert still gets an answer, and a reader
sees that its text is incomplete. JSON stays JSON: strings are cut inside the
structure and long arrays lose their tail, never the closing brackets.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from tracebound.events.records import DiagnosisRequest

# The longest annotation value, log line or other free-text field an event carries.
TEXT_CHARS = 8192
# The longest label value (label values are identifiers, not prose).
LABEL_CHARS = 1024
# The largest tool output one invocation carries, as compact JSON.
TOOL_OUTPUT_BYTES = 128 * 1024
# The most items one array of a tool output keeps.
TOOL_OUTPUT_ITEMS = 200


def cut_marker(more: int) -> str:
    return f" … [cut: {more} more characters]"


def cut_text(text: str, limit: int = TEXT_CHARS) -> str:
    """``text`` unchanged when it fits, else its first part and how much was cut."""
    if len(text) <= limit:
        return text
    keep = max(limit - len(cut_marker(len(text))), 0)
    return text[:keep] + cut_marker(len(text) - keep)


def cut_values(values: Mapping[str, str], limit: int) -> dict[str, str]:
    """Every value of ``values`` cut to ``limit`` (keys are kept whole)."""
    return {key: cut_text(value, limit) for key, value in values.items()}


def bound_json(value: Any, max_bytes: int = TOOL_OUTPUT_BYTES) -> Any:
    """``value`` (JSON data) within ``max_bytes`` as compact JSON, cut inside its structure.

    Strings are cut to :data:`TEXT_CHARS` and arrays to :data:`TOOL_OUTPUT_ITEMS`
    first; while the whole is still too large, both limits are quartered. The
    result is unchanged (the same object) when it already fits.
    """
    if len(orjson.dumps(value)) <= max_bytes:
        return value
    chars, items = TEXT_CHARS, TOOL_OUTPUT_ITEMS
    while True:
        bounded = _bound(value, chars, items)
        if len(orjson.dumps(bounded)) <= max_bytes or chars <= 16:
            return bounded
        chars, items = max(chars // 4, 16), max(items // 4, 1)


def _bound(value: Any, chars: int, items: int) -> Any:
    if isinstance(value, str):
        return cut_text(value, chars)
    if isinstance(value, Mapping):
        return {str(k): _bound(v, chars, items) for k, v in value.items()}
    if isinstance(value, list | tuple):
        kept = [_bound(v, chars, items) for v in value[:items]]
        if len(value) > items:
            kept.append(f"[cut: {len(value) - items} more items]")
        return kept
    return value


def slim_request(
    request: DiagnosisRequest, text_chars: int = 1024, alerts: int = 50
) -> DiagnosisRequest:
    """A copy of ``request`` small enough to carry on a failure path whatever it held:
    free text cut to ``text_chars`` and at most ``alerts`` alerts."""
    return request.model_copy(
        update={
            "query": cut_text(request.query, text_chars),
            "alerts": tuple(
                alert.model_copy(
                    update={
                        "labels": cut_values(alert.labels, min(text_chars, LABEL_CHARS)),
                        "annotations": cut_values(alert.annotations, text_chars),
                        "generatorURL": cut_text(alert.generatorURL, text_chars),
                    }
                )
                for alert in request.alerts[:alerts]
            ),
        }
    )
