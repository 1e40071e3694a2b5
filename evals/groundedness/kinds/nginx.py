# ruff: noqa: E501 - claim wordings and log lines are data, one per line
"""nginx alert kinds."""

from __future__ import annotations

import random
from typing import Any

from evals.groundedness.core import (
    Kind,
    Names,
    Values,
    View,
    kilo,
    pct,
    plain,
)
from evals.groundedness.kinds.alert_sources import W, am, base_view, since

# -- nginx ----------------------------------------------------------------------------


def _ngx5_make(rng: random.Random, n: Names) -> Values:
    return {
        "app": n.name("-gateway"),
        "ns": n.name(prefix="ns-"),
        "ratio": round(rng.uniform(0.021, 0.094), 4),
        "thr": 0.02,
        "win": 5,
        **since(rng),
    }


def _ngx5_view(v: Values) -> View:
    return {**base_view(v), "ratio_pct": pct(v["ratio"]), "thr_pct": pct(v["thr"])}


def _ngx5_ev(run_id: str, v: Values) -> dict[str, Any]:
    labels = {
        "alertname": "NginxHighHttp5xxErrorRate",
        "service": v["app"],
        "namespace": v["ns"],
        "job": "nginx-exporter",
    }
    notes = {
        "summary": f"{v['app']} returns too many 5xx responses",
        "description": f"Share of 5xx responses of {v['app']} over the last {v['win']}m is "
        f"{plain(v['ratio'])} (threshold {plain(v['thr'])}).",
        "value": plain(v["ratio"]),
        "threshold": plain(v["thr"]),
    }
    return am(run_id, v, labels, notes)


NGINX_5XX = Kind(
    name="nginx_5xx_rate",
    source="alertmanager/nginx-exporter",
    query_en="Why are users seeing errors?",
    query_zh="为什么用户看到报错？",
    make=_ngx5_make,
    view=_ngx5_view,
    evidence=_ngx5_ev,
    wordings=(
        W(
            "en",
            "{app} answers {ratio_pct} of requests with a 5xx status, above the {thr_pct} threshold.",
            ("value=ratio:ratio", "threshold=thr:ratio", "service=app"),
            ("num:ratio", "unit:{ratio_pct}>{ratio}%", "cmp:above>below", "cause"),
            excerpt=None,
        ),
        W(
            "en",
            "Over the last {win} minutes the 5xx error rate of {app} was {ratio_pct}.",
            ("window=win:minutes", "value=ratio:ratio", "service=app"),
            ("time:win", "ent:app", "swap:ratio:thr", "concl"),
            excerpt=2,
        ),
        W(
            "zh",
            "{app} 的 5xx 错误率为 {ratio_pct}，超过 {thr_pct} 的阈值。",
            ("service=app", "value=ratio:ratio", "threshold=thr:ratio"),
            ("num:ratio", "unit:{ratio_pct}>{ratio}%", "cmp:超过>低于", "cause"),
            excerpt=None,
        ),
        W(
            "zh",
            "最近 {win} 分钟 {app} 的 5xx 占比是 {ratio}，告警已持续 {dur_zh}。",
            ("window=win:minutes", "value=ratio:ratio", "duration=dur"),
            ("time:win", "num:ratio", "concl"),
            excerpt=None,
        ),
    ),
    causes={"en": ("an upstream pool that is exhausted",), "zh": ("上游连接池耗尽",)},
    conclusions={
        "en": ("rolling back the last release will fix it",),
        "zh": ("回滚上一次发布就能解决",),
    },
)


def _rps_make(rng: random.Random, n: Names) -> Values:
    return {"app": n.name("-gateway"), "rps": rng.randint(51, 190) * 10, "thr": 500, **since(rng)}


def _rps_view(v: Values) -> View:
    return {**base_view(v), "rps_k": kilo(v["rps"]) if v["rps"] >= 1000 else str(v["rps"])}


def _rps_ev(run_id: str, v: Values) -> dict[str, Any]:
    labels = {"alertname": "NginxHighRequestRate", "service": v["app"], "job": "nginx-exporter"}
    notes = {
        "summary": f"High request rate on {v['app']}",
        "description": f"nginx is serving {v['rps']} requests per second (threshold {v['thr']}).",
        "current_value": str(v["rps"]),
        "threshold": str(v["thr"]),
        "unit": "req/s",
    }
    return am(run_id, v, labels, notes)


NGINX_RPS = Kind(
    name="nginx_request_rate",
    source="alertmanager/nginx-exporter",
    query_en="Is traffic unusually high?",
    query_zh="流量是不是异常高？",
    make=_rps_make,
    view=_rps_view,
    evidence=_rps_ev,
    wordings=(
        W(
            "en",
            "{app} is serving RPS {rps}, against a threshold of {thr}.",
            ("value=rps:req/s", "threshold=thr:req/s", "service=app"),
            ("num:rps", "swap:rps:thr", "ent:app", "cause"),
            excerpt=None,
        ),
        W(
            "en",
            "Request rate on {app} reached {rps_k} req/s, more than the {thr} req/s alert threshold.",
            ("value=rps:req/s", "threshold=thr:req/s"),
            ("num:rps", "cmp:more than>less than", "unit:{rps_k} req/s>{rps_k} req/min", "concl"),
            excerpt=0,
        ),
        W(
            "zh",
            "{app} 的 QPS 达到 {rps}，阈值是 {thr}。",
            ("service=app", "value=rps:req/s", "threshold=thr:req/s"),
            ("num:rps", "swap:rps:thr", "cause"),
            excerpt=None,
        ),
        W(
            "zh",
            "{app} 每秒请求数 {rps}，高于 {thr} 的告警阈值，自 {since} UTC 起触发。",
            ("value=rps:req/s", "threshold=thr:req/s", "active_at=since"),
            ("time:since", "cmp:高于>低于", "concl"),
            excerpt=None,
        ),
    ),
    causes={"en": ("a retry storm from a mobile client",), "zh": ("移动端的重试风暴",)},
)
