"""Evidence refs: the minimal, citable text of each item a tool returned.

Why code builds them: the gatekeeper accepts a citation only when its excerpt is
found in a ref's text, so that text must come from the tool output itself and
never from a model. One ref per array item (``$.alerts[i]``, ``$.logs[i]``,
``$.evidence_blocks[i]``) merges the item's fields into one line; a query that
found nothing gets exactly one ``$.no_evidence`` ref whose text says only that
this query found nothing — never that the problem does not exist.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from tracebound.events import EvidenceRef, RetrievalDetails

NO_EVIDENCE_PATH = "$.no_evidence"
KNOWLEDGE_TEXT_LIMIT = 400

# Alert labels worth a place in the ref text; the rest repeat other fields.
ALERT_REF_LABELS: tuple[str, ...] = ("pod", "instance")
# What an alert's value or threshold reads as when the alert does not carry it.
UNSTATED = "unstated"

_SENTENCE_END = re.compile(r"[.!?;](?=\s|$)")


def _value(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


# How a unit is written after a number; a symbol (``%``) follows without a space,
# any other unit after one.
UNIT_SYMBOLS: dict[str, str] = {"percent": "%", "seconds": "s"}


def with_unit(value: Any, unit: str | None) -> str | None:
    """``97`` and ``percent`` (or ``%``) → ``97%``; a value already written with its unit stays."""
    if value in (None, ""):
        return None
    text = _value(value)
    try:
        float(text)
    except ValueError:
        return text
    unit = str(unit or "").strip()
    if not unit:
        return text
    symbol = UNIT_SYMBOLS.get(unit, unit if not unit[0].isalnum() else "")
    return f"{text}{symbol}" if symbol else f"{text} {unit}"


def alert_figures(alert: Mapping[str, Any]) -> dict[str, str]:
    """The alert's current value and threshold as stated, units attached.

    What the alert does not state reads ``unstated`` — said, never guessed and
    never left out; a threshold its rule did not let us read is ``unknown`` (the
    reason is in ``threshold_note``).
    """
    unit = alert.get("unit")
    threshold = with_unit(alert.get("threshold"), unit)
    if threshold is None:
        threshold = "unknown" if alert.get("threshold_note") else UNSTATED
    current = with_unit(alert.get("current_value"), unit) or UNSTATED
    return {"current": current, "threshold": threshold}


def alert_text(alert: Mapping[str, Any]) -> str:
    """``Name, service=…, state=…, current=…, threshold=…, duration=…, pod=…, active_at=…``.

    Values carry their unit, and a value or threshold the alert does not carry
    reads ``unstated``; a rule's comparison, ``for`` and the reason an unknown
    threshold is unknown follow the threshold. The alert's summary and
    description follow after ``;`` because some facts (JVM heap 3.8 GB / 4 GB)
    live only there. A ``runbook_url`` follows ``active_at``.
    """
    figures = alert_figures(alert)
    parts = [str(alert.get("alert_name") or "unnamed-alert")]
    fields = (
        ("service", alert.get("service")),
        ("state", alert.get("state")),
        ("current", figures["current"]),
        ("threshold", figures["threshold"]),
        ("comparison", alert.get("comparison")),
        ("threshold_note", alert.get("threshold_note")),
        ("for", alert.get("for")),
        ("duration", alert.get("duration")),
    )
    parts.extend(f"{key}={_value(value)}" for key, value in fields if value not in (None, ""))
    labels: Mapping[str, Any] = alert.get("labels") or {}
    parts.extend(f"{k}={labels[k]}" for k in ALERT_REF_LABELS if labels.get(k))
    if alert.get("active_at"):
        parts.append(f"active_at={alert['active_at']}")
    if alert.get("runbook_url"):
        parts.append(f"runbook_url={alert['runbook_url']}")
    notes = [str(alert.get(k) or "").strip() for k in ("summary", "description")]
    notes = list(dict.fromkeys(n for n in notes if n))
    return "; ".join([", ".join(parts), *notes])


def log_text(record: Mapping[str, Any]) -> str:
    """``<timestamp> <level> <service> <instance> <message>; k=v, k=v`` (metrics last)."""
    head = " ".join(
        str(record[k]) for k in ("timestamp", "level", "service", "instance") if record.get(k)
    )
    message = " ".join(str(record.get("message") or "").split())
    text = f"{head} {message}".strip()
    metrics: Mapping[str, Any] = record.get("metrics") or {}
    if metrics:
        text += "; " + ", ".join(f"{k}={_value(v)}" for k, v in metrics.items())
    return text


def trim_sentences(text: str, limit: int = KNOWLEDGE_TEXT_LIMIT) -> str:
    """Whitespace collapsed, cut after the last sentence that fits in ``limit``."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    window = text[:limit]
    ends = [m.end() for m in _SENTENCE_END.finditer(window)]
    if ends and ends[-1] >= limit // 3:
        return window[: ends[-1]]
    space = window.rfind(" ")
    return (window[:space] if space > 0 else window) + "…"


def knowledge_text(block: Mapping[str, Any]) -> str:
    """``<title> / <heading>: <content>`` with the content trimmed on a sentence."""
    return f"{block['title']} / {block['heading']}: {trim_sentences(str(block['content']))}"


def item_refs(array: str, items: Sequence[str]) -> tuple[EvidenceRef, ...]:
    """One ref per item text, at ``$.<array>[i]``."""
    return tuple(EvidenceRef(raw_path=f"$.{array}[{i}]", text=t) for i, t in enumerate(items))


def no_evidence_text(
    tool: str, query: str, topic: str | None, message: str, status: str = "no_evidence"
) -> str:
    """The one sentence a negative observation may cite."""
    verb = "returned no new evidence" if status == "deduped" else "returned no evidence"
    return (
        f"{tool} {verb}; evidence_status={status}; query={query}; "
        f"topic={topic or '-'}; total=0; message={message}"
    )


def supported(
    refs: tuple[EvidenceRef, ...], relevance_level: str | None = None
) -> RetrievalDetails:
    return RetrievalDetails(
        evidence_status="supported", evidence_refs=refs, relevance_level=relevance_level
    )


def no_evidence(tool: str, query: str, topic: str | None, message: str) -> RetrievalDetails:
    ref = EvidenceRef(raw_path=NO_EVIDENCE_PATH, text=no_evidence_text(tool, query, topic, message))
    return RetrievalDetails(evidence_status="no_evidence", evidence_refs=(ref,))


def deduped(tool: str, query: str, message: str, documents: Sequence[str]) -> RetrievalDetails:
    """Every hit was a document this run already returned: nothing new to cite."""
    ref = EvidenceRef(
        raw_path=NO_EVIDENCE_PATH,
        text=no_evidence_text(tool, query, None, message, status="deduped"),
    )
    reason = "documents already returned in this run: " + ", ".join(documents)
    return RetrievalDetails(evidence_status="deduped", evidence_refs=(ref,), dedup_reason=reason)
