"""Which log lines an answer states, and in what order.

Why an order: an answer keeps a limited number of claims, and a log line is one
sample among many. Errors come before warnings before the rest, and each message
shape is said once before any repeat. Of the lines of the search around the
first change (:mod:`onset_logs`), a message the recent search did not show comes
first, earliest first: routine lines are logged all the time, and the first new
message before a change is the likely trigger.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# lines of the search around the first change that an answer keeps
ONSET_LINES = 2
LEVEL_ORDER = {"CRITICAL": 0, "FATAL": 0, "ERROR": 1, "WARN": 2, "WARNING": 2}
_VARYING = re.compile(r"[0-9a-fA-F]*[0-9][0-9a-fA-F]*")

Claim = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Logged:
    """One stated log line: its claim text, message, level and time (epoch seconds)."""

    text: str
    message: str
    level: str
    at: float

    @property
    def severity(self) -> int:
        """How severe the level is: lower is more severe, an unlisted level least."""
        return LEVEL_ORDER.get(self.level.upper(), 3)


def shape(message: str) -> str:
    """``message`` with its numbers and hex ids set aside: the same message at another
    time or for another id has one shape."""
    return _VARYING.sub("#", message)


def _shape(claim: Claim) -> str:
    return shape(claim["claim_text"].split(" logged ", 1)[-1])


def distinct_first(logs: list[Claim]) -> list[Claim]:
    """Each message shape's first line, then its repeats (numbers and ids set aside).

    The same message at another time or with another id says nothing new; a
    different message may.
    """
    seen: set[str] = set()
    first: list[Claim] = []
    again: list[Claim] = []
    for claim in logs:
        shape = _shape(claim)
        (again if shape in seen else first).append(claim)
        seen.add(shape)
    return [*first, *again]


def by_level(logs: list[Claim], levels: Mapping[str, str]) -> list[Claim]:
    """Errors, then warnings, then the rest; each shape once before its repeats."""
    return distinct_first(
        sorted(logs, key=lambda c: LEVEL_ORDER.get(levels.get(c["claim_text"], ""), 3))
    )


def near_change(onset: list[Claim], times: Mapping[str, float], said: list[Claim]) -> list[Claim]:
    """The onset search's new messages, earliest first, then those ``said`` already showed."""
    known = {_shape(c) for c in said}
    texts = {c["claim_text"] for c in said}
    fresh = [c for c in onset if c["claim_text"] not in texts]
    fresh.sort(key=lambda c: (_shape(c) in known, times[c["claim_text"]]))
    return distinct_first(fresh)[:ONSET_LINES]
