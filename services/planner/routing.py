"""Which skill a request gets, and why: one routing precedence for both planners.

Why a fixed precedence: an alert says what happened by its name, while a
keyword only says which words a question uses — and the question of an alert
run also carries service names, so "HighDiskUsage on mysql" would otherwise
hit the MySQL connection-pool skill through its ``mysql`` keyword. The order is:

1. an input alert's ``alertname`` among a skill's alert triggers;
2. an input alert's labels among a skill's label triggers;
3. an alert run whose alerts no skill knows gets the fallback skill, the
   generic alert investigation — never a keyword match;
4. a question (chat) goes to the skill with the most alert triggers named in
   it, then the most keywords found in it (ties: alphabetical name).

Matching ignores case and whitespace and is plain substring search for
keywords, so Chinese keywords work without word boundaries. The reason is
recorded on the plan (``selection_reason``); the llm planner is given the
same choice and may not overrule an alert-based one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from services.planner.skills import Skill, squash
from tracebound.events import Alert, DiagnosisRequest

Basis = Literal["alertname", "label", "fallback", "question", "none"]
BINDING: frozenset[Basis] = frozenset({"alertname", "label", "fallback"})


@dataclass(frozen=True, slots=True)
class Selection:
    """The chosen skill (or none), what matched, and the input alert that chose it."""

    skill: Skill | None
    basis: Basis
    reason: str
    alert: Alert | None = None

    @property
    def binding(self) -> bool:
        """Whether an input alert decided it (a model planner may not choose otherwise)."""
        return self.basis in BINDING


def firing(request: DiagnosisRequest) -> tuple[Alert, ...]:
    return tuple(a for a in request.alerts if a.status == "firing")


def _alertname(alert: Alert) -> str:
    return alert.labels.get("alertname", "")


def _by_alertname(skills: Sequence[Skill], alerts: Sequence[Alert]) -> Selection | None:
    for alert in alerts:
        name = _alertname(alert)
        for skill in skills:
            if skill.knows_alert(name):
                reason = f"alertname {name} matches skill {skill.name}"
                return Selection(skill, "alertname", reason, alert)
    return None


def _by_label(skills: Sequence[Skill], alerts: Sequence[Alert]) -> Selection | None:
    for alert in alerts:
        for skill in skills:
            label = skill.label_match(alert.labels)
            if label:
                reason = f"label {label} of alert {_alertname(alert) or '-'} matches {skill.name}"
                return Selection(skill, "label", reason, alert)
    return None


def _fallback(skills: Sequence[Skill], alerts: Sequence[Alert]) -> Selection:
    names = ", ".join(dict.fromkeys(_alertname(a) or "unnamed" for a in alerts))
    generic = next((s for s in skills if s.fallback), None)
    if generic is None:
        return Selection(None, "none", f"no skill matches alertname {names}", alerts[0])
    reason = f"no skill matches alertname {names}: generic alert investigation"
    return Selection(generic, "fallback", reason, alerts[0])


@dataclass(frozen=True, slots=True)
class Score:
    """How many alert triggers and keywords of one skill a question names, and which."""

    alerts: int
    keywords: int
    hits: tuple[str, ...]


def score(skill: Skill, text: str, alert_names: Iterable[str] = ()) -> Score:
    """A question's match with one skill's alert triggers and keywords."""
    haystack = squash(text)
    named = {squash(a) for a in alert_names}
    alerts = [a for a in skill.triggers.alerts if squash(a) in named or squash(a) in haystack]
    words = [k for k in skill.triggers.keywords if squash(k) and squash(k) in haystack]
    hits = (*(f"alertname {a}" for a in alerts), *(f"keyword {k}" for k in words))
    return Score(len(alerts), len(words), hits)


def _by_question(skills: Sequence[Skill], text: str, alert_names: Iterable[str]) -> Selection:
    names = tuple(alert_names)
    scored = sorted(
        ((score(s, text, names), s) for s in skills if not s.fallback),
        key=lambda item: (-item[0].alerts, -item[0].keywords, item[1].name),
    )
    if not scored or not scored[0][0].hits:
        return Selection(None, "none", "no skill trigger matches the question")
    found, skill = scored[0]
    reason = f"{', '.join(found.hits)} in the question match skill {skill.name}"
    return Selection(skill, "question", reason)


def select(
    skills: Sequence[Skill], request: DiagnosisRequest, alert_names: Iterable[str] = ()
) -> Selection:
    """The skill for a request by the routing precedence above."""
    alerts = firing(request)
    if alerts:
        return (
            _by_alertname(skills, alerts) or _by_label(skills, alerts) or _fallback(skills, alerts)
        )
    return _by_question(skills, request.query, alert_names)


def deterministic_choice(selection: Selection) -> str:
    """The ``$routing`` note of the planner prompts: the choice and whether it binds."""
    name = selection.skill.name if selection.skill else "none"
    rule = (
        "it follows from the input alerts and must be kept"
        if selection.binding
        else "it follows from the question's words; choose another only with a reason"
    )
    return f"deterministic routing chose {name} ({selection.reason}); {rule}"


__all__ = ["Score", "Selection", "deterministic_choice", "firing", "score", "select"]
