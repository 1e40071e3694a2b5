"""Timestamps as Prometheus and Alertmanager write them (RFC 3339, up to nanoseconds).

One parser for every place that reads an alert's ``startsAt``/``endsAt`` or a
rule's ``activeAt``: Python's ``fromisoformat`` refuses more than six fraction
digits, and Alertmanager sends nine, so a private parser per module silently
dropped real timestamps.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

_FRACTION = re.compile(r"(\.\d{1,6})\d*")


def parse_time(value: str) -> datetime | None:
    """RFC 3339 text → aware datetime (naive text read as UTC); None when it is not one."""
    if not value:
        return None
    text = _FRACTION.sub(r"\1", value.strip()).replace("Z", "+00:00")
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
