"""Blackbox TLS expiry kinds (durations in days)."""

from __future__ import annotations

import random
from typing import Any

from evals.groundedness.core import (
    Kind,
    Names,
    Values,
    View,
    humanize_duration,
)
from evals.groundedness.kinds.alert_sources import W, am, base_view, since

# -- blackbox TLS expiry (durations in days) --------------------------------------------


def _ssl_make(rng: random.Random, n: Names) -> Values:
    return {
        "url": f"https://{n.word()}.{n.word()}.example",
        "d": rng.randint(2, 12),
        "h": rng.randint(1, 23),
        "m": rng.randint(1, 59),
        "thr_d": 14,
        **since(rng),
    }


def _ssl_view(v: Values) -> View:
    secs = int(v["d"]) * 86400 + int(v["h"]) * 3600 + int(v["m"]) * 60
    return {**base_view(v), "left": humanize_duration(secs)}


def _ssl_ev(run_id: str, v: Values) -> dict[str, Any]:
    secs = int(v["d"]) * 86400 + int(v["h"]) * 3600 + int(v["m"]) * 60
    labels = {
        "alertname": "BlackboxSslCertificateWillExpireSoon",
        "instance": v["url"],
        "job": "blackbox",
    }
    notes = {
        "summary": f"SSL certificate of {v['url']} expires soon",
        "description": f"SSL certificate for {v['url']} expires in {humanize_duration(secs)} "
        f"(alert below {v['thr_d']} days).",
    }
    return am(
        run_id,
        v,
        labels,
        notes,
        expr=f"probe_ssl_earliest_cert_expiry - time() < 86400 * {v['thr_d']}",
    )


SSL_EXPIRY = Kind(
    name="blackbox_ssl_expiry",
    source="alertmanager/blackbox-exporter",
    query_en="When does the certificate expire?",
    query_zh="证书什么时候过期？",
    make=_ssl_make,
    view=_ssl_view,
    evidence=_ssl_ev,
    wordings=(
        W(
            "en",
            "The TLS certificate of {url} expires in {d} days {h} hours {m} minutes.",
            (
                "value=d:days",
                "value.hours=h:hours",
                "value.minutes=m:minutes",
                "labels.instance=url",
            ),
            ("num:d", "num:h", "unit:{d} days>{d} weeks", "ent:url", "cause"),
            excerpt=2,
        ),
        W(
            "en",
            "{url}'s certificate has less than {thr_d} days left ({left}).",
            ("labels.instance=url", "threshold=thr_d:days", "value=d:days"),
            ("cmp:less than>more than", "ent:url", "concl"),
            excerpt=2,
        ),
        W(
            "zh",
            "{url} 的证书将在 {d} 天 {h} 小时 {m} 分钟后过期。",
            (
                "labels.instance=url",
                "value=d:days",
                "value.hours=h:hours",
                "value.minutes=m:minutes",
            ),
            ("num:d", "unit:{d} 天>{d} 周", "cause"),
            excerpt=2,
        ),
        W(
            "zh",
            "{url} 证书剩余有效期 {d} 天多，低于 {thr_d} 天的告警线。",
            ("labels.instance=url", "value=d:days", "threshold=thr_d:days"),
            ("num:d", "cmp:低于>高于", "swap:d:thr_d", "concl"),
            excerpt=2,
        ),
    ),
    causes={
        "en": ("the ACME challenge failing behind the new ingress",),
        "zh": ("新 ingress 后面的 ACME 校验失败",),
    },
    conclusions={
        "en": ("cert-manager renewal is broken",),
        "zh": ("cert-manager 的自动续期已经失效",),
    },
)
