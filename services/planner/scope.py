"""What a request is about: its services, alerts, evidence kinds and breadth.

The planner reads the question once and records what it found on the plan (the
narrow flag, and the services and alert names the executor's claims keep to).
Marker words are data (``rules/scope-rules.json``); a narrow question (contract
section 2.4) asks only to confirm something about a named service or alert,
which limits the executor to observations and no widening.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from tracebound import resources
from tracebound.errors import ConfigError
from tracebound.events import DiagnosisRequest

SCOPE_RULES_PATH = resources.path("rules", "scope-rules.json")


class ScopeRules(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    version: str
    description: str = ""
    confirm_markers: tuple[str, ...]
    broad_markers: tuple[str, ...]
    log_markers: tuple[str, ...]
    alert_markers: tuple[str, ...]
    service_pattern: str
    alert_name_pattern: str


@cache
def load_scope_rules(path: Path = SCOPE_RULES_PATH) -> ScopeRules:
    try:
        rules = ScopeRules.model_validate(json.loads(path.read_text(encoding="utf-8")))
        re.compile(rules.service_pattern)
        re.compile(rules.alert_name_pattern)
    except (OSError, ValueError, ValidationError, re.error) as exc:
        raise ConfigError(f"scope rules {path} are invalid: {exc}") from exc
    return rules


@dataclass(frozen=True, slots=True)
class Focus:
    """The entities and evidence kinds a request names."""

    text: str
    services: tuple[str, ...]
    alert_names: tuple[str, ...]
    asks_logs: bool
    asks_alerts: bool
    narrow: bool

    @property
    def service(self) -> str | None:
        return self.services[0] if self.services else None


def _has(text: str, markers: tuple[str, ...]) -> bool:
    return any(m in text for m in markers)


def _unique(items: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


def read_focus(request: DiagnosisRequest, rules: ScopeRules | None = None) -> Focus:
    rules = rules or load_scope_rules()
    text = request.query
    lowered = text.casefold()
    services = re.findall(rules.service_pattern, lowered)
    alert_names = re.findall(rules.alert_name_pattern, text)
    for alert in request.alerts:
        if alert.status == "firing":
            alert_names.append(alert.labels.get("alertname", ""))
            services.append(alert.labels.get("service", ""))
    services_t = _unique([s for s in services if s])
    alerts_t = _unique([a for a in alert_names if a])
    narrow = (
        request.mode == "CHAT"
        and bool(services_t or alerts_t)
        and _has(lowered, rules.confirm_markers)
        and not _has(lowered, rules.broad_markers)
    )
    return Focus(
        text=text,
        services=services_t,
        alert_names=alerts_t,
        asks_logs=_has(lowered, rules.log_markers),
        asks_alerts=_has(lowered, rules.alert_markers) or bool(alerts_t),
        narrow=narrow,
    )
