# ruff: noqa: E501 - claim wordings and log lines are data, one per line
"""CoreDNS alert kinds."""

from __future__ import annotations

import random
from typing import Any

from evals.groundedness.core import (
    Kind,
    Names,
    Values,
    View,
    pct,
    plain,
)
from evals.groundedness.kinds.alert_sources import W, am, base_view, prom, since

# -- CoreDNS ----------------------------------------------------------------------------


def _servfail_make(rng: random.Random, n: Names) -> Values:
    return {
        "server": f"dns://:{rng.choice((53, 1053))}",
        "zone": f"{n.word()}.{n.word()}.svc.cluster.local",
        "pod": f"coredns-{rng.randint(5, 9)}d{n.word()[:4]}{rng.randint(10, 99)}-{n.word()[:5]}",
        "ratio": round(rng.uniform(0.031, 0.19), 3),
        "thr": 0.03,
        **since(rng),
    }


def _servfail_view(v: Values) -> View:
    return {**base_view(v), "ratio_pct": pct(v["ratio"], 1), "thr_pct": pct(v["thr"], 0)}


def _servfail_ev(run_id: str, v: Values) -> dict[str, Any]:
    labels = {
        "alertname": "CoreDNSErrorsHigh",
        "pod": v["pod"],
        "server": v["server"],
        "job": "coredns",
    }
    notes = {
        "summary": "CoreDNS is returning SERVFAIL.",
        "description": f"CoreDNS is returning SERVFAIL for {pct(v['ratio'], 1)} of requests for zone {v['zone']}.",
        "value": plain(v["ratio"]),
    }
    expr = 'sum(rate(coredns_dns_responses_total{rcode="SERVFAIL"}[5m])) / sum(rate(coredns_dns_responses_total[5m])) > 0.03'
    return am(run_id, v, labels, notes, expr=expr)


COREDNS_SERVFAIL = Kind(
    name="coredns_servfail",
    source="alertmanager/coredns",
    query_en="Is DNS failing?",
    query_zh="DNS 解析是不是有问题？",
    make=_servfail_make,
    view=_servfail_view,
    evidence=_servfail_ev,
    wordings=(
        W(
            "en",
            "CoreDNS answers {ratio_pct} of queries for {zone} with SERVFAIL, above the {thr_pct} threshold.",
            ("value=ratio:ratio", "threshold=thr:ratio", "zone=zone"),
            ("num:ratio", "ent:zone", "cmp:above>below", "cause"),
            excerpt=None,
        ),
        W(
            "en",
            "The SERVFAIL ratio on {pod} is {ratio}.",
            ("labels.pod=pod", "value=ratio:ratio"),
            ("num:ratio", "unit:{ratio}>{ratio}%", "ent:pod", "concl"),
            excerpt=0,
        ),
        W(
            "zh",
            "{zone} 的 DNS 请求中有 {ratio_pct} 返回 SERVFAIL。",
            ("zone=zone", "value=ratio:ratio"),
            ("num:ratio", "ent:zone", "neg:有 {ratio_pct} 返回>没有 {ratio_pct} 返回", "cause"),
            excerpt=2,
        ),
        W(
            "zh",
            "CoreDNS pod {pod} 的 SERVFAIL 比例为 {ratio}，超过 {thr} 的阈值。",
            ("labels.pod=pod", "value=ratio:ratio", "threshold=thr:ratio"),
            ("swap:ratio:thr", "cmp:超过>低于", "concl"),
            excerpt=0,
        ),
    ),
    causes={"en": ("the upstream resolver being unreachable",), "zh": ("上游解析服务器不可达",)},
)


def _dnslat_make(rng: random.Random, n: Names) -> Values:
    return {
        "pod": f"coredns-{rng.randint(5, 9)}f{n.word()[:4]}{rng.randint(10, 99)}-{n.word()[:5]}",
        "app": n.name("-dns"),
        "p99": round(rng.uniform(0.31, 2.4), 3),
        "thr": 0.25,
        "hold": 600,
        **since(rng),
    }


def _dnslat_view(v: Values) -> View:
    return {
        **base_view(v),
        "p99_ms": str(round(v["p99"] * 1000)),
        "thr_ms": str(round(v["thr"] * 1000)),
    }


def _dnslat_ev(run_id: str, v: Values) -> dict[str, Any]:
    labels = {
        "alertname": "CoreDNSLatencyHigh",
        "pod": v["pod"],
        "service": v["app"],
        "job": "coredns",
    }
    notes = {
        "summary": "CoreDNS p99 latency is high",
        "description": f"CoreDNS p99 request latency on {v['pod']} is above {v['thr']}s.",
    }
    lhs = "histogram_quantile(0.99, sum by (le, pod) (rate(coredns_dns_request_duration_seconds_bucket[5m])))"
    return prom(
        run_id,
        v,
        labels,
        notes,
        expr=f"{lhs} > {v['thr']}",
        lhs=lhs,
        live=plain(v["p99"]),
        hold_s=v["hold"],
    )


COREDNS_LATENCY = Kind(
    name="coredns_latency",
    source="prometheus-api/coredns",
    query_en="Is DNS slow?",
    query_zh="DNS 解析慢吗？",
    make=_dnslat_make,
    view=_dnslat_view,
    evidence=_dnslat_ev,
    wordings=(
        W(
            "en",
            "CoreDNS p99 latency on {pod} is {p99_ms} ms, above the {thr_ms} ms threshold.",
            ("value=p99:seconds", "threshold=thr:seconds", "labels.pod=pod"),
            ("num:p99", "cmp:above>below", "unit:{p99_ms} ms>{p99_ms} s", "cause"),
            excerpt=None,
        ),
        W(
            "en",
            "{app} has had p99 DNS latency over {thr}s for at least 10 minutes.",
            ("service=app", "threshold=thr:seconds", "for=hold:seconds"),
            ("ent:app", "sub:time_window:10 minutes>6 hours", "concl"),
            excerpt=None,
        ),
        W(
            "zh",
            "{pod} 的 DNS 请求 p99 延迟为 {p99} 秒，高于 {thr} 秒。",
            ("labels.pod=pod", "value=p99:seconds", "threshold=thr:seconds"),
            ("num:p99", "swap:p99:thr", "cause"),
            excerpt=None,
        ),
        W(
            "zh",
            "{app} 的 DNS p99 延迟 {p99_ms} 毫秒，告警条件需持续 10 分钟才触发。",
            ("service=app", "value=p99:seconds", "for=hold:seconds"),
            ("num:p99", "sub:time_window:10 分钟>1 小时", "concl"),
            excerpt=None,
        ),
    ),
)
