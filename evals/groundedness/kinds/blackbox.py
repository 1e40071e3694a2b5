"""Blackbox exporter alert kinds."""

from __future__ import annotations

import random
from typing import Any

from evals.groundedness.core import (
    Kind,
    Names,
    Values,
    View,
    plain,
)
from evals.groundedness.kinds.alert_sources import W, am, base_view, since

# -- blackbox exporter --------------------------------------------------------------------


def _probe_make(rng: random.Random, n: Names) -> Values:
    return {
        "url": f"https://{n.word()}.{n.word()}.example/healthz",
        "module": rng.choice(("http_2xx", "http_post_2xx")),
        "mins": rng.choice((3, 5, 10)),
        "code": rng.choice((0, 502, 503)),
        **since(rng),
    }


def _probe_ev(run_id: str, v: Values) -> dict[str, Any]:
    labels = {
        "alertname": "BlackboxProbeFailed",
        "instance": v["url"],
        "job": "blackbox",
        "module": v["module"],
    }
    notes = {
        "summary": f"Probe failed for {v['url']}",
        "description": f"Probe {v['module']} against {v['url']} has been failing for more than "
        f"{v['mins']} minutes, last HTTP status {v['code']}.",
    }
    return am(run_id, v, labels, notes, expr="probe_success == 0")


PROBE_FAILED = Kind(
    name="blackbox_probe_failed",
    source="alertmanager/blackbox-exporter",
    query_en="Is the endpoint down?",
    query_zh="这个端点挂了吗？",
    make=_probe_make,
    view=base_view,
    evidence=_probe_ev,
    wordings=(
        W(
            "en",
            "The blackbox probe of {url} has been failing for more than {mins} minutes.",
            ("labels.instance=url", "for=mins:minutes"),
            ("time:mins", "neg:has been failing>has not been failing", "ent:url", "cause"),
            excerpt=2,
        ),
        W(
            "en",
            "{module} checks against {url} fail; the last HTTP status was {code}.",
            ("labels.module=module", "labels.instance=url", "status=code"),
            ("num:code", "concl"),
            excerpt=2,
        ),
        W(
            "zh",
            "对 {url} 的探测已连续失败超过 {mins} 分钟。",
            ("labels.instance=url", "for=mins:minutes"),
            ("time:mins", "neg:已连续失败>并未失败", "cause"),
            excerpt=2,
        ),
        W(
            "zh",
            "探测 {url} 最近一次返回的 HTTP 状态码是 {code}，探测失败告警自 {since} UTC 起触发。",
            ("status=code", "active_at=since"),
            ("num:code", "time:since", "concl"),
            excerpt=None,
        ),
    ),
)


def _slow_probe_make(rng: random.Random, n: Names) -> Values:
    return {
        "url": f"https://{n.word()}.{n.word()}.example/api/v{rng.randint(1, 3)}/status",
        "lat": round(rng.uniform(1.21, 4.8), 2),
        "thr": 1,
        **since(rng),
    }


def _slow_probe_view(v: Values) -> View:
    return {**base_view(v), "lat_ms": str(round(v["lat"] * 1000))}


def _slow_probe_ev(run_id: str, v: Values) -> dict[str, Any]:
    labels = {"alertname": "BlackboxSlowProbe", "instance": v["url"], "job": "blackbox"}
    notes = {
        "summary": "Slow probe",
        "description": f"Blackbox probe took more than {v['thr']}s to complete: "
        f"{plain(v['lat'])}s for {v['url']}.",
        "value": plain(v["lat"]),
    }
    return am(
        run_id, v, labels, notes, expr=f"avg_over_time(probe_duration_seconds[1m]) > {v['thr']}"
    )


PROBE_SLOW = Kind(
    name="blackbox_probe_latency",
    source="alertmanager/blackbox-exporter",
    query_en="Is the endpoint slow?",
    query_zh="端点响应慢吗？",
    make=_slow_probe_make,
    view=_slow_probe_view,
    evidence=_slow_probe_ev,
    wordings=(
        W(
            "en",
            "The probe of {url} took {lat_ms} ms, more than the {thr} s threshold.",
            ("value=lat:seconds", "threshold=thr:seconds", "labels.instance=url"),
            ("num:lat", "unit:{lat_ms} ms>{lat_ms} s", "cmp:more than>less than", "cause"),
            excerpt=2,
        ),
        W(
            "en",
            "Probe latency for {url} is {lat} seconds.",
            ("value=lat:seconds", "labels.instance=url"),
            ("num:lat", "ent:url", "concl"),
            excerpt=2,
        ),
        W(
            "zh",
            "探测 {url} 耗时 {lat} 秒，超过了 {thr} 秒的阈值。",
            ("value=lat:seconds", "threshold=thr:seconds"),
            ("num:lat", "cmp:超过了>未超过", "cause"),
            excerpt=2,
        ),
        W(
            "zh",
            "{url} 的探测延迟为 {lat_ms} 毫秒，慢探测告警已持续 {dur_zh}。",
            ("value=lat:seconds", "duration=dur"),
            ("num:lat", "unit:{lat_ms} 毫秒>{lat_ms} 秒", "concl"),
            excerpt=None,
        ),
    ),
)
