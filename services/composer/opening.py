"""The opening lines of an alert run's answer: which alerts it is about.

Why from the request: a person reading an answer to an alert first needs to
know which alert it answers — its name, service, value and since when — before
any finding. Those facts are the input the run was started with (the alerts the
request carries), not a conclusion, so they are quoted from it by code after
the answer guard has screened the findings, and only what an alert carries is
shown: a value, threshold or unit appears only when a label or annotation
(``value``/``current_value``, ``threshold``, ``unit``) states it, or when the
alert's summary or description states it in words that leave no doubt (read by
:mod:`tracebound.alert_figures`, the same reading the executor's alert items
use) — never invented. The onset is the alert's ``startsAt``, the one the
alert items' ``active_at`` and duration use too; a ``runbook_url`` is shown.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import UTC

from services.composer.compose import ComposedAnswer
from services.composer.templates import Phrases, TemplatesFile, phrases
from tracebound.alert_figures import alert_figures, states_percent, texts_of
from tracebound.alert_printing import display, display_unit
from tracebound.events import Alert, DiagnosisRequest
from tracebound.rfc3339 import parse_time

VALUE_KEYS = ("value", "current_value")
WHERE_KEYS = ("service", "instance", "job")
# What tells two alerts of one rule and service apart (two pods at different values).
INSTANCE_KEYS = ("pod", "instance")
MAX_ALERT_LINES = 10
MAX_FIELD_CHARS = 120
_TIGHT_UNITS = frozenset({"%", "‰"})
# The runbook link of an alert line (a URL is an identifier, not a fixed phrase).
RUNBOOK = {"en": "runbook {url}", "zh": "处理手册 {url}"}
MAX_URL_CHARS = 300


def _field(alert: Alert, *keys: str) -> str:
    """The first non-empty annotation or label among ``keys`` (annotations first), trimmed."""
    for source in (alert.annotations, alert.labels):
        for key in keys:
            value = " ".join(str(source.get(key, "")).split())
            if value:
                return value[:MAX_FIELD_CHARS]
    return ""


def _label(alert: Alert, key: str) -> str:
    return " ".join(str(alert.labels.get(key, "")).split())[:MAX_FIELD_CHARS]


def _with_unit(figure: str, unit: str) -> str:
    """``91.5`` and ``%`` → ``91.5%``; a figure written with its unit (``93%``) stays."""
    if not unit or figure.endswith(unit):
        return figure
    try:
        float(figure)
    except ValueError:
        return figure
    return f"{figure}{unit}" if unit in _TIGHT_UNITS else f"{figure} {unit}"


def _since(starts_at: str) -> str:
    """``startsAt`` as ``YYYY-MM-DD HH:MM:SS UTC``; the raw text when it is not a timestamp."""
    moment = parse_time(starts_at)
    if moment is None:
        return starts_at[:MAX_FIELD_CHARS]
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _runbook(alert: Alert, language: str) -> str:
    url = "".join(str(alert.annotations.get("runbook_url", "")).split())[:MAX_URL_CHARS]
    if not url:
        return ""
    return RUNBOOK["zh" if language.lower().startswith("zh") else "en"].format(url=url)


def _figures(alert: Alert) -> tuple[str, str, str]:
    """Value, threshold and unit: as annotations or labels name them, else as the words state."""
    unit = _field(alert, "unit")
    value, threshold = _field(alert, *VALUE_KEYS), _field(alert, "threshold")
    if not value or not threshold:
        read = alert_figures(alert.annotations, alert.labels.get("alertname", ""))
        value = value or (read.value.text[:MAX_FIELD_CHARS] if read.value else "")
        threshold = threshold or (read.threshold.text[:MAX_FIELD_CHARS] if read.threshold else "")
    if unit in ("bytes", "ratio"):
        percent = states_percent(texts_of(alert.annotations))
        value = (display(value, unit, percent) or "") if value else ""
        threshold = (display(threshold, unit, percent) or "") if threshold else ""
        unit = display_unit(unit, percent) or ""
    return value, threshold, unit


def alert_line(alert: Alert, p: Phrases, language: str = "en") -> str:
    """One alert: name and service, then value, threshold, start time and runbook it has."""
    name = alert.labels.get("alertname") or p.alert_unnamed
    where = _field(alert, *WHERE_KEYS)
    subject = p.alert_subject.format(name=name, service=where) if where else name
    instance = next((v for k in INSTANCE_KEYS if (v := _label(alert, k)) and v != where), "")
    if instance:
        subject = f"{subject} ({instance})"
    value, threshold, unit = _figures(alert)
    details: list[str] = []
    if value:
        details.append(p.alert_value.format(value=_with_unit(value, unit)))
    if threshold:
        details.append(p.alert_threshold.format(threshold=_with_unit(threshold, unit)))
    if alert.startsAt.strip():
        details.append(p.alert_since.format(since=_since(alert.startsAt.strip())))
    if runbook := _runbook(alert, language):
        details.append(runbook)
    if not details:
        return subject
    return p.alert_line.format(subject=subject, details=p.alert_separator.join(details))


def opening_lines(
    alerts: Sequence[Alert], language: str, templates: TemplatesFile | None = None
) -> list[str]:
    """The header and one line per firing alert; empty when the run has none."""
    firing = [a for a in alerts if a.status == "firing"]
    if not firing:
        return []
    p = phrases(language, templates)
    shown = firing[:MAX_ALERT_LINES]
    lines = [p.alerts_header, *(p.bullet + alert_line(a, p, language) for a in shown)]
    if len(firing) > MAX_ALERT_LINES:
        lines.append(p.bullet + p.alerts_more)
    return lines


def with_opening(
    answer: ComposedAnswer,
    request: DiagnosisRequest,
    templates: TemplatesFile | None = None,
) -> ComposedAnswer:
    """The answer preceded by the alerts it is about (alert runs only)."""
    lines = opening_lines(request.alerts, request.language, templates)
    if not lines:
        return answer
    text = "\n".join([*lines, "", answer.user_facing_answer])
    return dataclasses.replace(answer, user_facing_answer=text)
