"""Row values as JSON: timestamps as ISO text, and tolerant readers of ``jsonb`` columns.

The read side serves what the projection stored. ``jsonb`` columns hold what
the events carried (the executor's structured output included, which may be
malformed), so the readers here take any shape and never raise: a trace of a
run with odd data is still a trace.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, date, datetime
from typing import Any


def jsonable(value: Any) -> Any:
    """``value`` with timestamps as ISO strings, so a document survives ``json.dumps`` unchanged."""
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value.astimezone(UTC).isoformat(timespec="milliseconds")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return value


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` when it is an object, else an empty one."""
    return dict(value) if isinstance(value, Mapping) else {}


def as_list(value: Any) -> list[Any]:
    """``value`` when it is an array, else an empty one."""
    return list(value) if isinstance(value, list | tuple) else []


def epoch_ms(moment: Any) -> int | None:
    """Milliseconds since the epoch of a timestamp or its ISO text; None for anything else."""
    if isinstance(moment, str):
        try:
            moment = datetime.fromisoformat(moment)
        except ValueError:
            return None
    if not isinstance(moment, datetime):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)
