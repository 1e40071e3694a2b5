"""Causes named by logged messages, when no diagnosis rule holds on the series.

Why: a metric a service does not export cannot hold a premise, but its logs may
still say what broke ("No space left on device", "Connection is not available,
request timed out"). An SRE searches for such messages first.
``rules/log-signatures.json`` declares them. A signature counts the error,
warning and fatal lines (and the levels it names itself: a JVM logs GC at INFO)
logged in the diagnosis rules' window around the onset
(an old failure or a later one is not a cause), and never a message (one of its
patterns) also logged before that window (a chronic message). The signature with
the most lines names a labelled hypothesis, quoting the first line of the message
it read most often, and that line is stated, so the cause rests on a checked claim.
The series come first: a log signature is read only when no diagnosis rule held,
or when it refines the first rule that held (it names why that rule's premises
changed: a name that does not resolve, for calls that fail).
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator

from services.executor.deploy_errors import AfterDeploy, deployed_at, new_error
from services.executor.diagnosis import Series, circumstantial, rulebook
from services.executor.log_lines import Logged, shape
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
    # diagnosis rules whose cause this signature's says more precisely: a name that
    # does not resolve is why the outgoing calls of "dependency-failing" fail
    refines: tuple[str, ...] = ()
    # ``False``: the message says why a rule's premises changed, never that anything
    # failed (logging was raised), so it names a cause only beside a rule it refines
    alone: bool = True
    # minutes before the onset its lines count from (default: the diagnosis rules'):
    # a setting that starts a slow fill precedes the alert by longer than an error does
    lead_minutes: float | None = Field(default=None, gt=0)

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

    def pattern_of(self, message: str) -> int:
        """Which of the patterns matches ``message`` first (-1: none): one signature reads
        many messages, and each pattern is one of them whatever its ids and numbers."""
        return next((i for i, c in enumerate(self._compiled) if c.search(message)), -1)

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
    """A cause a log names: its id and category, its cause text (``{message}``: the first
    line's message, quoted from ``at``), and the claim text of that first line."""

    id: str
    category: str
    causes: Mapping[Literal["en", "zh"], str]
    first: str
    message: str
    at: int = 0

    def cause(self, lang: Literal["en", "zh"]) -> str:
        """The cause, quoting the first line's message."""
        return self.causes[lang].replace("{message}", quoted(self.message, self.at))


def _commonest_unknown(unknown: Sequence[Logged], severity: int) -> int:
    """How often the commonest of the ``unknown`` messages (no signature matches them), at
    ``severity`` or a more severe level, was logged."""
    shapes = Counter(shape(line.message) for line in unknown if line.severity <= severity)
    return max(shapes.values(), default=0)


def named(
    lines: Sequence[Logged],
    onset: float,
    book: Signatures | None = None,
    refining: str | None = None,
) -> Named | None:
    """The signature most lines near ``onset`` match (the earliest first line breaks a tie),
    unless a message it does not know, as severe as its lines or more, was logged more
    often: the commonest error is what an SRE reads first, and a rarer known one beside it
    is no cause of its own. ``refining``: only the signatures that refine this rule (a held
    one); ``None``: only those that name a cause alone."""
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
        if not (signature.alone if refining is None else refining in signature.refines):
            continue
        lead = signature.lead_minutes or rules.lead_minutes
        read = levels | {level.upper() for level in signature.levels}
        loud = (line for line in ordered if line.level.upper() in read)
        tagged = [(line, signature.pattern_of(line.message)) for line in loud]
        # a message logged before the window too is chronic, not this cause
        chronic = {p for line, p in tagged if p >= 0 and line.at < onset - lead * 60}
        hits = [(x, p) for x, p in tagged if p >= 0 and p not in chronic and x.at <= end]
        if not hits:
            continue
        # beside the rule it refines, a setting's line need not outnumber the errors
        louder = _commonest_unknown(unknown, min(x.severity for x, _ in hits))
        if signature.alone and len(hits) < louder:
            continue
        if (-len(hits), hits[0][0].at) < rank:
            first = _quoted_line(hits)
            at = signature.position(first.message)
            cause = signature.cause
            best = Named(signature.id, signature.category, cause, first.text, first.message, at)
            rank = (-len(hits), hits[0][0].at)
    return best


def _quoted_line(hits: Sequence[tuple[Logged, int]]) -> Logged:
    """The first line of the message a signature read most often (``hits``: lines in time
    order, with the pattern each matched): an older, rarer message of the same signature
    (a timeout beside the new refusals) is not the one the cause should quote."""
    counts = Counter(p for _, p in hits)
    top = max(counts.values())
    return next(line for line, p in hits if counts[p] == top)


def near_onset(
    lines: Sequence[Logged],
    series: Sequence[Series],
    alerts: Sequence[Alert],
    refining: str | None = None,
) -> Named | None:
    """:func:`named` around the onset the series give, else the firing alerts' start."""
    moments = [s.onset for s in series if s.onset is not None]
    moments += [m.timestamp() for a in alerts if (m := parse_time(a.startsAt or ""))]
    return named(lines, moments[0], refining=refining) if moments else None


def unless_held(
    found: Sequence[tuple[str, str]],
    lines: Sequence[Logged],
    series: Sequence[Series],
    alerts: Sequence[Alert],
) -> Named | None:
    """:func:`near_onset`; once a diagnosis rule that is more than circumstantial held
    (``found``: the rule ids and causes that held), only a signature that refines the
    first such rule. Behind circumstantial rules alone, a signature that names a cause
    on its own goes first, then one that refines the first of them."""
    strong = next((rule for rule, _ in found if not circumstantial(rule)), None)
    if strong is not None:
        return near_onset(lines, series, alerts, refining=strong)
    first = found[0][0] if found else None
    return (
        near_onset(lines, series, alerts)
        or (near_onset(lines, series, alerts, refining=first) if first else None)
        or after_deploy(lines, series)
    )


def after_deploy(
    lines: Sequence[Logged], series: Sequence[Series], book: Signatures | None = None
) -> Named | None:
    """The new error that began right after a deploy the series show, as a cause naming
    its first line (the line's own words are this run's signature)."""
    entry = (book or signatures()).after_deploy
    deployed = deployed_at(series)
    if entry is None or deployed is None:
        return None
    line = new_error(lines, deployed, entry)
    if line is None:
        return None
    return Named(entry.id, entry.category, entry.cause, line.text, line.message)
