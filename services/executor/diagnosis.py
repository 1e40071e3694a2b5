"""Diagnosis rules: declared patterns from checked series facts to a ranked cause.

Why data: a cause is an inference, and an inference is only as good as the
pattern behind it. ``rules/diagnosis-rules.json`` declares each pattern — the
premises (a query of the PromQL catalogue and a test on one of its series) and
the cause it supports — so a reader sees exactly why a cause was named, and a
new pattern is a new entry, not new code. A rule holds when all its required
premises hold on this run's series; the executor then states every premise as
an observation (checked by the verifier like any other) and the cause as a
labelled hypothesis that names them. A change counts only when it began
between ``lead_minutes`` before the alert's onset and ``grace_minutes`` after
it: an anomaly that began after the alert, or long before it, is never a
premise, and another service's series never reach this run (queries are scoped).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from services.executor.tools.series_shares import level_now, same_group
from tracebound import resources
from tracebound.errors import ConfigError
from tracebound.rfc3339 import parse_time

RULES_PATH = resources.path("rules", "diagnosis-rules.json")


class Premise(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    query: str
    test: Literal[
        "present",
        "rose",
        "fell",
        "worsened",
        "growing",
        "shrinking",
        "steady",
        "increased",
        "appeared",
        "reaches",
        "peaks",
        "below",
    ]
    labels: dict[str, str] = Field(default_factory=dict)
    # a regular expression searched in what the series is (a swept series: its metric name)
    name: str | None = None
    # regular expressions searched in label values ("persistentvolumeclaim": "logs")
    matching: dict[str, str] = Field(default_factory=dict)
    of: str | None = None
    share: float = Field(default=1.0, gt=0, le=10)
    # ``rose``/``fell``: by at least this factor between an hour before and the onset
    min_ratio: float = Field(default=0.0, ge=0)
    # ``increased``: by at least this much (two restarts: memory climbed back twice)
    at_least: float = Field(default=0.0, ge=0)
    # ``increased``: also above its value an hour before the onset (one restart long
    # before the alert is no premise of it)
    recent: bool = False
    optional: bool = False
    new_version: bool = False
    # a series of the dependency the failing calls go to (a second query_prometheus
    # call, ``dependency``), never of the alert's own service; and the other way round
    dependency: bool = False
    # the change began after one of these queries' changes (or first sighting) and
    # no more than ``within_minutes`` later: the order of cause and effect
    after: tuple[str, ...] = ()
    within_minutes: float = Field(default=30.0, gt=0)
    # and no sooner than this many minutes after it: a pool that filled long before its
    # calls failed was not filled by them
    later_by_minutes: float = Field(default=0.0, ge=0)

    @field_validator("name")
    @classmethod
    def _pattern(cls, v: str | None) -> str | None:
        if v is not None:
            re.compile(v)
        return v

    @field_validator("matching")
    @classmethod
    def _patterns(cls, v: dict[str, str]) -> dict[str, str]:
        for pattern in v.values():
            re.compile(pattern)
        return v


class Rule(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    category: str
    cause: dict[Literal["en", "zh"], str]
    premises: tuple[Premise, ...] = Field(min_length=1)
    needs_one_of: tuple[str, ...] = ()
    # circumstantial evidence (the alert's expression worsened after a deploy): it ranks
    # as this many premises at most, however many deploy markers held, and a log
    # signature's cause goes before it
    circumstantial: bool = False
    # the premises' series that carry one of these labels agree on it (one pod's memory)
    same_labels: tuple[str, ...] = ()
    # minutes before the onset a change counts from (default: the book's): a volume that
    # fills slowly began to fill long before a prediction of "full within hours" fired
    lead_minutes: float | None = Field(default=None, gt=0)


CIRCUMSTANTIAL_RANK = 2


class Rulebook(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    version: str
    description: str = ""
    lead_minutes: float = Field(gt=0)
    grace_minutes: float = Field(ge=0)
    rules: tuple[Rule, ...]


@cache
def rulebook() -> Rulebook:
    try:
        return Rulebook.model_validate(json.loads(RULES_PATH.read_text(encoding="utf-8")))
    except (OSError, ValueError, ValidationError) as exc:
        raise ConfigError(f"diagnosis rules {RULES_PATH} are unusable: {exc}") from exc


def circumstantial(rule_id: str) -> bool:
    """Whether the shipped rule ``rule_id`` is circumstantial evidence only."""
    return any(r.id == rule_id and r.circumstantial for r in rulebook().rules)


@dataclass(frozen=True, slots=True)
class Series:
    """One cited series: where it is in the trace, and its item."""

    key: tuple[int, str]  # (source_invocation_id, raw_path)
    item: Mapping[str, Any]

    @property
    def query(self) -> str:
        return str(self.item.get("query") or "")

    @property
    def labels(self) -> Mapping[str, str]:
        labels: Mapping[str, str] = self.item.get("labels") or {}
        return labels

    @property
    def dependency(self) -> str:
        """The dependency this series is of ("" for the alert's own service)."""
        return str(self.item.get("dependency") or "")

    def value(self, name: str) -> float | None:
        values: Mapping[str, Any] = self.item.get("facts", {}).get("values", {})
        raw = values.get(name)
        return float(raw) if isinstance(raw, int | float) else None

    @property
    def onset(self) -> float | None:
        moment = parse_time(str(self.item.get("facts", {}).get("onset") or ""))
        return moment.timestamp() if moment else None


@dataclass(frozen=True, slots=True)
class Finding:
    """A rule that held, with the series its premises rest on, in premise order."""

    rule: Rule
    premises: tuple[Series, ...]


def _in_window(moment: float | None, onset: float | None, book: Rulebook) -> bool:
    if moment is None or onset is None:
        return False
    return onset - book.lead_minutes * 60 <= moment <= onset + book.grace_minutes * 60


def _changed(s: Series, direction: str, book: Rulebook) -> bool:
    if s.item.get("facts", {}).get("direction") != direction:
        return False
    began = s.value("change_began")
    if began is not None:
        return _in_window(began, s.onset, book)
    # no clear change point: the change between an hour before and the onset counts
    return s.value("hour_before") is not None


def _level(s: Series, p: Premise) -> bool:
    """``steady``: no change in the window; ``increased``: higher at the onset than at its start."""
    if p.test == "steady":
        return bool(s.item.get("facts", {}).get("direction") == "steady")
    first, now, before = s.value("first"), level_now(s.item), s.value("hour_before")
    if p.recent and before is not None and now is not None and now <= before:
        return False
    return first is not None and now is not None and now > first and now - first >= p.at_least


def _compared(s: Series, p: Premise, series: Sequence[Series]) -> bool:
    """``reaches``: at least ``share`` of the other query's level (``peaks``: at its
    highest in the window); ``below``: under it."""
    level = s.value("max") if p.test == "peaks" else level_now(s.item)
    shared = [
        o
        for o in series
        if o.query == p.of and o.dependency == s.dependency and same_group(o.labels, s.labels)
    ]
    others = [v for o in shared if (v := level_now(o.item)) is not None and v > 0]
    if level is None or not others:
        return False
    if p.test == "below":
        return level < p.share * min(others)
    return level >= p.share * max(others)


def _new_versions(series: Sequence[Series], book: Rulebook) -> set[str]:
    """Versions first seen in the window: by ``build_info``, or by their own series."""
    return {
        s.labels.get("version", "")
        for s in series
        if not s.dependency and _in_window(s.value("first_seen"), s.onset, book)
    } - {""}


def _on_new(s: Series, series: Sequence[Series], book: Rulebook) -> bool:
    """``s`` is of a version that appeared in the window (of any version, when none did)."""
    version = s.labels.get("version", "")
    new = _new_versions(series, book)
    return bool(version) and (version in new if new else True)


# change points are found on a grid of 15-30 s steps and a rollout takes minutes
_SLACK_S = 120.0


def _moment(s: Series) -> float | None:
    """When ``s`` changed: where its change began, else when it was first seen."""
    began = s.value("change_began")
    return began if began is not None else s.value("first_seen")


def _follows(p: Premise, s: Series, held: Sequence[Series]) -> bool:
    """``s`` changed after a held series of ``p.after`` did, within ``p.within_minutes``
    and at least ``p.later_by_minutes`` later."""
    if not p.after:
        return True
    began = s.value("change_began")
    causes = [m for o in held if o.query in p.after and (m := _moment(o)) is not None]
    earliest = p.later_by_minutes * 60 if p.later_by_minutes else -_SLACK_S
    return began is not None and any(
        m + earliest <= began <= m + p.within_minutes * 60 for m in causes
    )


def _direction(s: Series, p: Premise) -> str:
    """The direction a ``rose``/``fell`` premise asks for; ``worsened``: the direction in
    which the series moves toward firing (the alert's own expression: ``worse``)."""
    return str(s.item.get("worse") or "") if p.test == "worsened" else p.test


def _by_factor(s: Series, p: Premise) -> bool:
    """The change from an hour before to the onset is at least ``p.min_ratio``-fold."""
    if not p.min_ratio:
        return True
    before, now = s.value("hour_before"), s.value("at_onset")
    low, high = (before, now) if _direction(s, p) == "rose" else (now, before)
    if low is None or high is None or high <= 0 or low < 0:
        return False
    return low == 0 or high / low >= p.min_ratio


def _selects(p: Premise, s: Series) -> bool:
    """``s`` is of the premise's query, with its labels and (when given) its name."""
    if s.query != p.query or any(s.labels.get(k) != v for k, v in p.labels.items()):
        return False
    if any(not re.search(rx, s.labels.get(k, ""), re.IGNORECASE) for k, rx in p.matching.items()):
        return False
    if bool(s.dependency) != p.dependency:
        return False
    # a swept series is its metric's name, or "mean <name>" for a histogram's mean; the
    # alert's own expression is its PromQL
    expr = s.item.get("expr")
    name = str(expr) if expr else str(s.item.get("what") or "").split(" ")[-1]
    return p.name is None or re.search(p.name, name, re.IGNORECASE) is not None


def _holds(  # noqa: PLR0911 - one return per kind of test
    p: Premise, s: Series, series: Sequence[Series], book: Rulebook
) -> bool:
    if not _selects(p, s):
        return False
    if p.test == "present":
        return True
    if p.test in ("rose", "fell", "worsened"):
        direction = _direction(s, p)
        return (
            direction in ("rose", "fell")
            and _changed(s, direction, book)
            and _by_factor(s, p)
            and (not p.new_version or _on_new(s, series, book))
        )
    if p.test == "appeared":
        return _in_window(s.value("first_seen"), s.onset, book)
    if p.test in ("growing", "shrinking"):
        # still climbing (or falling) in the half hour before the onset: a level that
        # accumulates, whenever its change began
        return bool(s.item.get("facts", {}).get("trend") == p.test)
    if p.test in ("steady", "increased"):
        return _level(s, p)
    return p.of is not None and _compared(s, p, series)


def _agrees(s: Series, held: Sequence[Series], names: Sequence[str]) -> bool:
    """``s`` has the values of ``names`` the held series have, where both carry them."""
    return all(
        s.labels.get(n) == o.labels.get(n)
        for o in held
        for n in names
        if s.labels.get(n) and o.labels.get(n)
    )


def evaluate(series: Sequence[Series], book: Rulebook | None = None) -> list[Finding]:
    """The rules that hold on ``series``, best supported first."""
    book = book or rulebook()
    found: list[tuple[int, int, Finding]] = []
    for order, rule in enumerate(book.rules):
        own = (
            book.model_copy(update={"lead_minutes": rule.lead_minutes})
            if rule.lead_minutes
            else book
        )
        held: list[Series] = []
        ok = True
        names: set[str] = set()
        # premises that follow another change are matched once those changes are held
        for p in sorted(rule.premises, key=lambda p: bool(p.after)):
            match = next(
                (
                    s
                    for s in series
                    if _holds(p, s, series, own)
                    and _follows(p, s, held)
                    and _agrees(s, held, rule.same_labels)
                ),
                None,
            )
            if match is None:
                if not p.optional:
                    ok = False
                    break
                continue
            names.add(p.query)
            if match not in held:
                held.append(match)
        if not ok or (rule.needs_one_of and not names & set(rule.needs_one_of)):
            continue
        rank = min(len(held), CIRCUMSTANTIAL_RANK) if rule.circumstantial else len(held)
        found.append((-rank, order, Finding(rule, tuple(held))))
    return [f for _, _, f in sorted(found, key=lambda x: (x[0], x[1]))]
