"""What one stated log line says: its message, and the error a structured logger
attached to it.

Why the error field: zap, logrus, slog, structlog and ECS loggers write a short
message ("decrypt payee bank details") and put what failed in a field of its
own (``err="… Code: 503 … Vault is sealed"``). An SRE reads both; a claim that
quotes only the message hides the cause, and a log signature that reads only the
message never sees it. The field's value is quoted as the record holds it, cut
at a space, so the verifier finds it word for word in the cited record.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# the fields structured loggers name their error in, the most specific first
ERROR_FIELDS = (
    "err",
    "error",
    "error.message",
    "error_message",
    "exception",
    "exception.message",
    "exc_info",
)
# how much of an error field a claim quotes: enough for the error's own words
DETAIL_CHARS = 240


def error_detail(item: Mapping[str, Any]) -> tuple[str, str] | None:
    """The record's error field and its value (cut at a space), or None (also when the
    message already holds it)."""
    fields: Mapping[str, Any] = item.get("metrics") or {}
    message = str(item.get("message") or "")
    for name in ERROR_FIELDS:
        value = str(fields.get(name) or "").strip()
        if not value:
            continue
        if value in message:
            return None  # the message already says it
        if len(value) > DETAIL_CHARS:
            cut = value.rfind(" ", 0, DETAIL_CHARS)
            value = value[: cut if cut > 0 else DETAIL_CHARS].rstrip()
        return name, value
    return None


def wording(item: Mapping[str, Any], lang: str, t: Mapping[str, Any]) -> str:
    """The claim for one log record: when, who, the level and the message, then the
    error field a structured logger attached (``log_error``)."""
    values = {k: item.get(k) for k in ("timestamp", "service", "level", "message")}
    text = str(t["log"][lang]).format(**{k: v or "-" for k, v in values.items()})
    detail = error_detail(item)
    if detail is not None:
        text += str(t["log_error"][lang]).format(field=detail[0], value=detail[1])
    return text


def searched(item: Mapping[str, Any]) -> str:
    """What a log signature reads: the message and its error field's value."""
    message = str(item.get("message") or "")
    detail = error_detail(item)
    return message if detail is None else f"{message} {detail[1]}"
