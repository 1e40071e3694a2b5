"""Timestamps as Prometheus and Alertmanager write them (RFC 3339, up to nanoseconds).

One parser for every place that reads an alert's ``startsAt``/``endsAt`` or a
rule's ``activeAt``: Python's ``fromisoformat`` refuses more than six fraction
digits, and Alertmanager sends nine, so a private parser per module silently
dropped real timestamps.

A time outside :data:`EARLIEST` … :data:`LATEST` reads as no time at all: Go's
zero time (``0001-01-01T00:00:00Z``, what Alertmanager sends as the ``endsAt``
of a firing alert) means "unset", and a year past 9999 cannot be held by
Python, so neither may reach arithmetic, a read model or a page.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

_FRACTION = re.compile(r"(\.\d{1,6})\d*")
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(2200, 1, 1, tzinfo=UTC)
# Go's zero time: Alertmanager's endsAt of a firing alert, meaning "not set".
ZERO_TIME = "0001-01-01T00:00:00Z"


def in_window(moment: datetime) -> bool:
    """Whether a time lies from :data:`EARLIEST` to :data:`LATEST` (naive reads as UTC).

    The years are compared first: shifting year 1 or 9999 by its offset overflows.
    """
    naive = moment.replace(tzinfo=None)
    if not EARLIEST.year <= naive.year < LATEST.year:
        return False
    utc = naive - (moment.utcoffset() or timedelta())
    return EARLIEST.replace(tzinfo=None) <= utc < LATEST.replace(tzinfo=None)


def parse_time(value: str) -> datetime | None:
    """RFC 3339 text → aware UTC datetime (naive text read as UTC); None when it is not
    one, or when it lies outside the window."""
    if not value:
        return None
    text = _FRACTION.sub(r"\1", value.strip()).replace("Z", "+00:00")
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if not in_window(moment):
        return None
    return moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)
