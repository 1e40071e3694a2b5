"""The demo environment: shipped alerts and log records on a fixed clock.

Why relative times: the data files store ages ("25 minutes ago"), and this module
places them on ``ToolSettings.demo_now``. The same files therefore give the same
timestamps, durations and evidence texts on every machine and in every replay,
while a test can still move the clock and see every record move with it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tracebound.errors import ConfigError

M = TypeVar("M", bound=BaseModel)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DemoAlert(_Strict):
    alert_name: str = Field(min_length=1)
    service: str = Field(min_length=1)
    state: Literal["firing", "pending"]
    severity: str
    active_minutes_ago: float = Field(ge=0)
    current_value: str
    threshold: str
    description: str
    labels: dict[str, str]


class DemoLog(_Strict):
    topic: str = Field(min_length=1)
    seconds_ago: int = Field(ge=0)
    level: str
    service: str = Field(min_length=1)
    instance: str
    message: str = Field(min_length=1)
    metrics: dict[str, Any] = Field(default_factory=dict)


class _AlertsFile(_Strict):
    description: str = ""
    alerts: tuple[DemoAlert, ...]


class _LogsFile(_Strict):
    description: str = ""
    logs: tuple[DemoLog, ...]


@dataclass(frozen=True, slots=True)
class LogRow:
    """One log record placed on the clock, as the log store keeps it."""

    topic: str
    ts: datetime
    level: str
    service: str
    instance: str
    message: str
    metrics: dict[str, Any]


def _load(path: Path, model: type[M]) -> M:
    try:
        return model.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, ValidationError) as exc:
        raise ConfigError(f"demo data {path} is unreadable or invalid: {exc}") from exc


@cache
def demo_alerts(data_dir: Path) -> tuple[DemoAlert, ...]:
    return _load(data_dir / "alerts.json", _AlertsFile).alerts


@cache
def demo_logs(data_dir: Path) -> tuple[DemoLog, ...]:
    return _load(data_dir / "logs.json", _LogsFile).logs


def iso_utc(moment: datetime) -> str:
    """``2026-07-08T22:45:00Z``: the alert timestamp format of every envelope."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_ts(moment: datetime) -> str:
    """``2026-07-08 23:05:28`` in UTC: the timestamp of every log envelope."""
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def format_duration(seconds: float) -> str:
    """``25m``, ``1h5m``, ``40s``: how long an alert has been active."""
    total = max(int(seconds), 0)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m" if minutes else f"{hours}h"
    if minutes:
        return f"{minutes}m{secs}s" if secs else f"{minutes}m"
    return f"{secs}s"


def alerts_at(now: datetime, data_dir: Path) -> list[dict[str, Any]]:
    """The demo alerts as metrics-envelope items, oldest first."""
    items: list[dict[str, Any]] = []
    for alert in demo_alerts(data_dir):
        age = timedelta(minutes=alert.active_minutes_ago)
        items.append(
            {
                "alert_name": alert.alert_name,
                "service": alert.service,
                "description": alert.description,
                "state": alert.state,
                "severity": alert.severity,
                "active_at": iso_utc(now - age),
                "duration": format_duration(age.total_seconds()),
                "current_value": alert.current_value,
                "threshold": alert.threshold,
                "labels": dict(alert.labels),
            }
        )
    items.sort(key=lambda a: (a["active_at"], a["alert_name"]))
    return items


def log_rows_at(now: datetime, data_dir: Path) -> list[LogRow]:
    """The demo log records placed on the clock, oldest first."""
    rows = [
        LogRow(
            topic=log.topic,
            ts=now - timedelta(seconds=log.seconds_ago),
            level=log.level,
            service=log.service,
            instance=log.instance,
            message=log.message,
            metrics=dict(log.metrics),
        )
        for log in demo_logs(data_dir)
    ]
    rows.sort(key=lambda r: (r.ts, r.topic, r.service, r.message))
    return rows


def rows_hash(rows: list[LogRow]) -> str:
    """Content hash of a placed data set: the store reloads only when it changes."""
    digest = hashlib.sha256()
    for row in rows:
        line = [row.topic, row.ts.isoformat(), row.level, row.service, row.instance, row.message]
        digest.update(json.dumps([*line, row.metrics], sort_keys=True).encode())
        digest.update(b"\n")
    return digest.hexdigest()
