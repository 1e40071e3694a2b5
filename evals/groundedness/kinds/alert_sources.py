"""What the alert kinds share: Alertmanager webhook alerts and Prometheus API alerts."""

from __future__ import annotations

import hashlib
import random
from typing import Any
from urllib.parse import quote_plus

from evals.groundedness import evidence
from evals.groundedness.core import (
    Values,
    View,
    Wording,
    hms_en,
    hms_zh,
    plain,
)
from services.executor.tools.demo_env import format_duration

W = Wording
W = Wording
DAY = "2026-11-18"


def age_of(v: Values) -> int:
    hh, mm = (int(x) for x in str(v["since"]).split(":"))
    start = hh * 3600 + mm * 60 + int(v["sec"])
    req = evidence.REQUESTED_AT
    return req.hour * 3600 + req.minute * 60 + req.second - start


def base_view(v: Values) -> View:
    out = {k: plain(x) if isinstance(x, float) else str(x) for k, x in v.items()}
    if "since" in v:
        age = age_of(v)
        shown = age - age % 60 if age >= 3600 else age  # format_duration drops seconds
        out.update(
            dur=format_duration(age),
            dur_en=hms_en(shown),
            dur_zh=hms_zh(shown),
            dur_min=str(age // 60),
        )
    return out


def since(rng: random.Random) -> dict[str, Any]:
    hour = rng.choice((5, 6, 7, 8))
    return {"since": f"{hour:02d}:{rng.randint(1, 58):02d}", "sec": rng.randint(1, 59)}


def am(
    run_id: str,
    v: Values,
    labels: dict[str, str],
    notes: dict[str, str],
    *,
    expr: str | None = None,
    filters: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``query_metrics`` over one Alertmanager alert that fired at ``since``."""
    alert = {
        "status": "firing",
        "labels": {"severity": "warning", **labels},
        "annotations": notes,
        "startsAt": f"{DAY}T{v['since']}:{int(v['sec']):02d}Z",
        "endsAt": "0001-01-01T00:00:00Z",
        "generatorURL": (
            f"http://prometheus.{v.get('ns', 'monitoring')}.svc:9090/graph?g0.expr="
            f"{quote_plus(expr)}&g0.tab=1"
            if expr
            else ""
        ),
        "fingerprint": hashlib.sha256(run_id.encode()).hexdigest()[:16],
    }
    params = filters or {"alert_name": labels["alertname"], "state": "firing"}
    return evidence.request_alerts(run_id, [alert], params)


def prom(
    run_id: str,
    v: Values,
    labels: dict[str, str],
    notes: dict[str, str],
    *,
    expr: str,
    lhs: str,
    live: str,
    hold_s: int,
) -> dict[str, Any]:
    """``query_metrics`` over Prometheus' alerts, rules and live query API."""
    active = f"{DAY}T{v['since']}:{int(v['sec']):02d}.{int(v['sec']) * 7 % 1000:03d}Z"
    alert = {
        "labels": {"severity": "warning", **labels},
        "annotations": notes,
        "state": "firing",
        "activeAt": active,
        "value": live,
    }
    rule = {
        "name": labels["alertname"],
        "query": expr,
        "duration": hold_s,
        "labels": {"severity": "warning"},
        "annotations": {},
        "alerts": [alert],
        "type": "alerting",
    }
    series = {k: val for k, val in labels.items() if k not in ("alertname", "severity")}
    api = {
        "/api/v1/alerts": {"alerts": [alert]},
        "/api/v1/rules": {"groups": [{"name": "g", "rules": [rule]}]},
        "query": {
            lhs: {"resultType": "vector", "result": [{"metric": series, "value": [0, live]}]}
        },
    }
    return evidence.prometheus_alerts(run_id, api, {"alert_name": labels["alertname"]})
