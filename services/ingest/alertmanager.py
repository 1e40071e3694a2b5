"""From an Alertmanager webhook to ``DiagnosisRequested`` events.

One module serves the webhook and ``tracebound publish`` so both cut alerts
into runs the same way. Alertmanager already groups alerts (``group_by`` in its
route); by default one webhook group is one run, because the alerts of a group
usually share a cause and the AIOps rules judge a report against its input
alerts. ``group_by="alert"`` gives each firing alert its own run instead.
Resolved alerts never start a run: there is nothing left to diagnose.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import TypeAdapter, ValidationError

from services.ingest.models import (
    MAX_QUESTION_CHARS,
    AlertmanagerWebhook,
    ListedAlert,
    WebhookAlert,
)
from tracebound.errors import InvalidInputError
from tracebound.events import Alert, DiagnosisRequest, DiagnosisRequested
from tracebound.events import Producer as ProducerRef
from tracebound.events.base import utcnow

SERVICE = "ingest"
GroupBy = Literal["group", "alert"]
_CJK = re.compile(r"[\u3400-\u9fff]")
_FNV_OFFSET = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3
_LISTED = TypeAdapter(list[ListedAlert])


def label_fingerprint(labels: dict[str, str]) -> str:
    """Alertmanager's fingerprint of a label set: FNV-1a 64 over sorted name/value pairs.

    Used only when a payload carries no fingerprint (hand-written files), so the
    same labels always dedupe to the same alert, as they would in Alertmanager.
    """
    value = _FNV_OFFSET
    for name in sorted(labels):
        for part in (name, labels[name]):
            for byte in part.encode() + b"\xff":
                value = ((value ^ byte) * _FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
    return f"{value:016x}"


def to_record(alert: WebhookAlert) -> Alert:
    return Alert(
        status=alert.status,
        labels=dict(alert.labels),
        annotations=dict(alert.annotations),
        startsAt=alert.startsAt,
        endsAt=alert.endsAt,
        generatorURL=alert.generatorURL,
        fingerprint=alert.fingerprint or label_fingerprint(alert.labels),
    )


@dataclass(frozen=True, slots=True)
class AlertGroup:
    """The firing alerts that become one run."""

    key: str
    receiver: str
    alerts: tuple[Alert, ...]
    truncated: int = 0

    @property
    def incidents(self) -> tuple[tuple[str, str], ...]:
        """``(fingerprint, startsAt)`` of each firing alert: what makes an incident.

        Alertmanager keeps an alert's ``startsAt`` while it fires; after a resolution the
        same labels fire again with a new one, which is a new incident.
        """
        return tuple(sorted((a.fingerprint, a.startsAt) for a in self.alerts))

    @property
    def dedup_key(self) -> str:
        """A short id of the group's incidents, for logs."""
        text = self.key + "\n" + ",".join(f"{fp}@{at}" for fp, at in self.incidents)
        return hashlib.sha256(text.encode()).hexdigest()


def group_key(payload: AlertmanagerWebhook) -> str:
    """Alertmanager's ``groupKey``, or one derived from receiver and group labels."""
    if payload.groupKey:
        return payload.groupKey
    return f"{payload.receiver}:{json.dumps(payload.groupLabels, sort_keys=True)}"


def firing_groups(payload: AlertmanagerWebhook, group_by: GroupBy = "group") -> list[AlertGroup]:
    """The runs a webhook asks for (none when nothing fires)."""
    firing: dict[str, Alert] = {}
    for alert in payload.alerts:
        if alert.status == "firing":
            record = to_record(alert)
            firing.setdefault(record.fingerprint, record)  # one alert listed twice is one
    if not firing:
        return []
    key = group_key(payload)
    if group_by == "alert":
        return [
            AlertGroup(f"{key}/{fp}", payload.receiver, (a,), payload.truncatedAlerts)
            for fp, a in firing.items()
        ]
    return [AlertGroup(key, payload.receiver, tuple(firing.values()), payload.truncatedAlerts)]


def resolved_alerts(payload: AlertmanagerWebhook) -> list[Alert]:
    return [to_record(a) for a in payload.alerts if a.status == "resolved"]


def describe(alert: Alert) -> str:
    """``HighCPUUsage on payment-service (summary)``: the words the planner reads."""
    labels = alert.labels
    where = labels.get("service") or labels.get("instance") or labels.get("job")
    text = labels.get("alertname", "unnamed alert") + (f" on {where}" if where else "")
    note = alert.annotations.get("summary") or alert.annotations.get("description")
    return f"{text} ({note.strip()})" if note and note.strip() else text


def alert_query(group: AlertGroup) -> str:
    query = "Diagnose firing alerts: " + "; ".join(describe(a) for a in group.alerts)
    if group.truncated:
        query += f" (and {group.truncated} more alerts truncated by Alertmanager)"
    if len(query) > MAX_QUESTION_CHARS:
        query = query[: MAX_QUESTION_CHARS - 1] + "…"
    return query


def build_request(
    group: AlertGroup, language: str, run_id: str | None = None
) -> DiagnosisRequested:
    """The AIOPS request of one alert group; the alerts travel with it unchanged."""
    return DiagnosisRequested(
        run_id=run_id or str(uuid.uuid4()),
        producer=ProducerRef(service=SERVICE),
        request=DiagnosisRequest(
            mode="AIOPS",
            query=alert_query(group),
            alerts=group.alerts,
            language=language,
            requested_by=f"alertmanager:{group.receiver}",
            requested_at=utcnow(),
        ),
    )


def detect_language(question: str, given: str | None) -> str:
    return given or ("zh" if _CJK.search(question) else "en")


def build_chat_request(
    question: str, session_id: str, language: str | None, requested_by: str = "chat-api"
) -> DiagnosisRequested:
    return DiagnosisRequested(
        run_id=str(uuid.uuid4()),
        session_id=session_id,
        producer=ProducerRef(service=SERVICE),
        request=DiagnosisRequest(
            mode="CHAT",
            query=question,
            language=detect_language(question, language),
            requested_by=requested_by,
            requested_at=utcnow(),
        ),
    )


def parse_document(data: Any, receiver: str = "cli") -> AlertmanagerWebhook:
    """A webhook object, one alert object, or a list of alerts made into one group of ``receiver``.

    An object with ``labels`` and no ``alerts`` is a single alert. Raises
    ``ValidationError`` with the same locations the HTTP API reports.
    """
    if isinstance(data, dict) and "alerts" not in data and "labels" in data:
        data = [data]
    if isinstance(data, list):
        alerts = _LISTED.validate_python(data)
        status = "firing" if any(a.status == "firing" for a in alerts) else "resolved"
        return AlertmanagerWebhook(status=status, receiver=receiver, alerts=list(alerts))
    return AlertmanagerWebhook.model_validate(data)


def first_problem(exc: ValidationError) -> str:
    """One line naming the first problem, for a CLI's exit-2 message."""
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or "document"
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{where}: {err['msg']}{more}"


def load_document(text: str | bytes, receiver: str = "cli") -> AlertmanagerWebhook:
    """Parse and validate a file's content, as ``InvalidInputError`` on any problem."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise InvalidInputError(f"not JSON: {exc}") from exc
    if not isinstance(data, dict | list):
        raise InvalidInputError(
            "expected an Alertmanager webhook object, an alert object or a list of alerts"
        )
    try:
        return parse_document(data, receiver)
    except ValidationError as exc:
        raise InvalidInputError(first_problem(exc)) from exc


def requests_for(
    payload: AlertmanagerWebhook, group_by: GroupBy, language: str
) -> Sequence[tuple[AlertGroup, DiagnosisRequested]]:
    """Every firing group with a fresh request (the CLI path: no dedup)."""
    return [(g, build_request(g, language)) for g in firing_groups(payload, group_by)]
