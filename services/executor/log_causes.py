"""Causes named by logged messages, when no diagnosis rule holds on the series.

Why: a metric a service does not export cannot hold a premise, but its logs may
still say what broke ("No space left on device", "Connection is not available,
request timed out"). An SRE searches for such messages first.
``rules/log-signatures.json`` declares them. A signature counts the error,
warning and fatal lines (and the levels it names itself: a JVM logs GC at INFO)
logged in the diagnosis rules' window around the onset
(an old failure or a later one is not a cause), and never one that also matched
a line logged before that window (a chronic message). The signature with the most
lines names a labelled hypothesis, and its first line is stated, so the cause
rests on a checked claim. The series come first: a log signature is read only
when no diagnosis rule held.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator

from services.executor.deploy_errors import AfterDeploy, deployed_at, new_error
from services.executor.diagnosis import Series, circumstantial, rulebook
from services.executor.log_lines import LEVEL_ORDER, shape
from tracebound import resources
from tracebound.errors import ConfigError
from tracebound.events import Alert
from tracebound.rfc3339 import parse_time

SIGNATURES_PATH = resources.path("rules", "log-signatures.json")


class Signature(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    category: str
    patterns: tuple[str, ...] = Field(min_length=1)
    cause: dict[Literal["en", "zh"], str]
    # levels read besides the book's: a JVM's unified GC log writes its pauses at INFO
    levels: tuple[str, ...] = ()

    _compiled: tuple[re.Pattern[str], ...] = PrivateAttr(default=())

    @field_validator("patterns")
    @classmethod
    def _compiles(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for pattern in v:
            re.compile(pattern)
        return v

    def model_post_init(self, context: object, /) -> None:
        self._compiled = tuple(re.compile(p, re.IGNORECASE) for p in self.patterns)

    def matches(self, message: str) -> bool:
        return any(c.search(message) for c in self._compiled)

    def position(self, message: str) -> int:
        """Where in ``message`` the first of its patterns matched (0 if none does); a
        pattern anchored at the start (``^(?!…).*could not obtain``) by its last words."""
        found = [_last_words(message, m) for c in self._compiled if (m := c.search(message))]
        return min(found, default=0)


class Signatures(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    version: str
    description: str = ""
    levels: tuple[str, ...] = Field(min_length=1)
    signatures: tuple[Signature, ...]
    # a new error message that began right after a deploy (:mod:`deploy_errors`)
    after_deploy: AfterDeploy | None = None


@cache
def signatures() -> Signatures:
    try:
        raw = json.loads(SIGNATURES_PATH.read_text(encoding="utf-8"))
        return Signatures.model_validate(raw)
    except (OSError, ValueError, ValidationError) as exc:
        raise ConfigError(f"log signatures {SIGNATURES_PATH} are unusable: {exc}") from exc


@dataclass(frozen=True, slots=True)
class Logged:
    """One stated log line: its claim text, message, level and time (epoch seconds)."""

    text: str
    message: str
    level: str
    at: float


# the first line's message a cause quotes: at most this many characters, cut at a space
QUOTED_CHARS = 100


def _last_words(message: str, m: re.Match[str]) -> int:
    """Where a match's own words begin: its start, or for a long match (``^(?!…).*could
    not obtain``) the word boundary before its last 60 characters."""
    if m.end() - m.start() <= _MATCH_CHARS:
        return m.start()
    return max(m.start(), message.rfind(" ", 0, m.end() - _MATCH_CHARS) + 1)


_MATCH_CHARS = 60
# how much of the message before the signature's own words the quote keeps
_LEAD_CHARS = 30


def quoted(message: str, at: int = 0) -> str:
    """``message`` in quotes around position ``at`` (where a signature matched), at most
    :data:`QUOTED_CHARS` long, cut at spaces (never inside a word or a number, which the
    composer would read as a fact no claim holds); a cut is marked with an ellipsis."""
    text = re.sub(r"\s", " ", message)  # one line, every position kept
    # from a word boundary at most _LEAD_CHARS before the match (else the match itself)
    space = text.find(" ", at - _LEAD_CHARS, at)
    start = 0 if at <= _LEAD_CHARS else (space + 1 if space >= 0 else at)
    part = text[start:].strip()
    if len(part) > QUOTED_CHARS:
        # at the last space within the limit, else the first after it: never in a token
        cut = part.rfind(" ", 0, QUOTED_CHARS + 1)
        cut = cut if cut > 0 else part.find(" ", QUOTED_CHARS)
        part = part if cut < 0 else part[:cut].rstrip(" ,;:") + " \u2026"
    lead = "\u2026 " if start > 0 else ""
    return f"\u201c{lead}{part}\u201d"


@dataclass(frozen=True, slots=True)
class Named:
    """The signature that named a cause, the claim text of its first line, and its message."""

    signature: Signature
    first: str
    message: str

    def cause(self, lang: Literal["en", "zh"]) -> str:
        """The signature's cause, quoting the first line's message (``{message}``)."""
        at = self.signature.position(self.message)
        return self.signature.cause[lang].replace("{message}", quoted(self.message, at))


def _severity(line: Logged) -> int:
    """How severe the line's level is: lower is more severe, an unlisted level least."""
    return LEVEL_ORDER.get(line.level.upper(), 3)


def _commonest_unknown(unknown: Sequence[Logged], severity: int) -> int:
    """How often the commonest of the ``unknown`` messages (no signature matches them), at
    ``severity`` or a more severe level, was logged."""
    shapes = Counter(shape(line.message) for line in unknown if _severity(line) <= severity)
    return max(shapes.values(), default=0)


def named(lines: Sequence[Logged], onset: float, book: Signatures | None = None) -> Named | None:
    """The signature most lines near ``onset`` match (the earliest first line breaks a tie),
    unless a message it does not know, as severe as its lines or more, was logged more
    often: the commonest error is what an SRE reads first, and a rarer known one beside it
    is no cause of its own."""
    book = book or signatures()
    rules = rulebook()
    start, end = onset - rules.lead_minutes * 60, onset + rules.grace_minutes * 60
    levels = {level.upper() for level in book.levels}
    ordered = sorted(lines, key=lambda x: x.at)
    window = [x for x in ordered if start <= x.at <= end and x.level.upper() in levels]
    unknown = [x for x in window if not any(s.matches(x.message) for s in book.signatures)]
    best: Named | None = None
    rank = (0, math.inf)
    for signature in book.signatures:
        read = levels | {level.upper() for level in signature.levels}
        loud = (line for line in ordered if line.level.upper() in read)
        matched = [line for line in loud if signature.matches(line.message)]
        if any(line.at < start for line in matched):
            continue  # logged before the window too: a chronic message, not this cause
        hits = [line for line in matched if line.at <= end]
        if not hits or len(hits) < _commonest_unknown(unknown, min(map(_severity, hits))):
            continue
        if (-len(hits), hits[0].at) < rank:
            best = Named(signature, hits[0].text, hits[0].message)
            rank = (-len(hits), hits[0].at)
    return best


def near_onset(
    lines: Sequence[Logged], series: Sequence[Series], alerts: Sequence[Alert]
) -> Named | None:
    """:func:`named` around the onset the series give, else the firing alerts' start."""
    moments = [s.onset for s in series if s.onset is not None]
    moments += [m.timestamp() for a in alerts if (m := parse_time(a.startsAt or ""))]
    return named(lines, moments[0]) if moments else None


def unless_held(
    found: Sequence[tuple[str, str]],
    lines: Sequence[Logged],
    series: Sequence[Series],
    alerts: Sequence[Alert],
) -> Named | None:
    """:func:`near_onset`, unless a diagnosis rule that is more than circumstantial held
    (``found``: the rule ids and causes that held)."""
    if any(not circumstantial(rule) for rule, _ in found):
        return None
    return near_onset(lines, series, alerts) or after_deploy(lines, series)


def after_deploy(
    lines: Sequence[Logged], series: Sequence[Series], book: Signatures | None = None
) -> Named | None:
    """The new error that began right after a deploy the series show, as a cause naming
    its first line (the line's own words are this run's signature)."""
    entry = (book or signatures()).after_deploy
    deployed = deployed_at(series)
    if entry is None or deployed is None:
        return None
    first = new_error([(x.level, x.message, x.at) for x in lines], deployed, entry)
    line = next((x for x in lines if first and (x.message, x.at) == first[1:]), None)
    if line is None:
        return None
    cause = {lang: text for lang, text in entry.cause.items() if lang in ("en", "zh")}
    made = Signature(
        id=entry.id, category=entry.category, patterns=(re.escape(line.message),), cause=cause
    )
    return Named(made, line.text, line.message)
