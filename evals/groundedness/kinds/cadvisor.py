# ruff: noqa: E501 - claim wordings and log lines are data, one per line
"""cAdvisor alert kinds."""

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

# -- cAdvisor ------------------------------------------------------------------------------


def _throttle_make(rng: random.Random, n: Names) -> Values:
    app = n.name("-svc")
    return {
        "app": app,
        "ns": n.name(prefix="ns-"),
        "container": n.word(),
        "pod": f"{app}-{rng.randint(5, 9)}b{n.word()[:4]}{rng.randint(10, 99)}-{n.word()[:5]}",
        "thr_pct": round(rng.uniform(26.0, 78.0), 1),
        "limit": 25,
        **since(rng),
    }


def _throttle_ev(run_id: str, v: Values) -> dict[str, Any]:
    labels = {
        "alertname": "CPUThrottlingHigh",
        "namespace": v["ns"],
        "pod": v["pod"],
        "container": v["container"],
        "job": "cadvisor",
        "service": v["app"],
    }
    notes = {
        "summary": "Processes experience elevated CPU throttling.",
        "description": f"{plain(v['thr_pct'])}% throttling of CPU in namespace {v['ns']} for "
        f"container {v['container']} in pod {v['pod']} (threshold {v['limit']}%).",
    }
    return am(run_id, v, labels, notes)


CONTAINER_CPU = Kind(
    name="cadvisor_cpu_throttling",
    source="alertmanager/cadvisor",
    query_en="Is the container CPU throttled?",
    query_zh="容器 CPU 被限流了吗？",
    make=_throttle_make,
    view=base_view,
    evidence=_throttle_ev,
    wordings=(
        W(
            "en",
            "Container {container} in {ns} is being CPU throttled {thr_pct}% of the time, above the {limit}% threshold.",
            (
                "value=thr_pct:percent",
                "threshold=limit:percent",
                "labels.container=container",
                "labels.namespace=ns",
            ),
            ("num:thr_pct", "swap:thr_pct:limit", "cmp:above>below", "cause"),
            excerpt=2,
        ),
        W(
            "en",
            "{app} pod {pod} shows {thr_pct}% CPU throttling.",
            ("service=app", "labels.pod=pod", "value=thr_pct:percent"),
            ("num:thr_pct", "ent:app", "neg:shows>shows no", "concl"),
            excerpt=None,
        ),
        W(
            "zh",
            "命名空间 {ns} 中容器 {container} 的 CPU 限流比例为 {thr_pct}%，高于 {limit}% 的阈值。",
            ("value=thr_pct:percent", "threshold=limit:percent", "labels.namespace=ns"),
            ("num:thr_pct", "cmp:高于>低于", "ent:ns", "cause"),
            excerpt=2,
        ),
        W(
            "zh",
            "{app} 的 CPU 节流率 {thr_pct}%，告警已经触发 {dur_zh}。",
            ("service=app", "value=thr_pct:percent", "duration=dur"),
            ("swap:thr_pct:limit", "ent:app", "concl"),
            excerpt=None,
        ),
    ),
    causes={
        "en": ("a CPU limit set too low in the chart",),
        "zh": ("Chart 里 CPU limit 设置过低",),
    },
    conclusions={"en": ("removing the CPU limit is safe",), "zh": ("去掉 CPU limit 是安全的",)},
    entity_suffix={"app": "-svc"},
)


def _cmem_make(rng: random.Random, n: Names) -> Values:
    app = n.name("-svc")
    limit = rng.choice((1024, 2048, 4096))
    return {
        "app": app,
        "ns": n.name(prefix="ns-"),
        "container": n.word(),
        "limit": limit,
        "ws": round(limit * rng.uniform(0.9, 0.98)),
        **since(rng),
    }


def _cmem_view(v: Values) -> View:
    return {
        **base_view(v),
        "limit_gib": f"{v['limit'] / 1024:g}",
        "share": f"{v['ws'] / v['limit'] * 100:.1f}",
    }


def _cmem_ev(run_id: str, v: Values) -> dict[str, Any]:
    labels = {
        "alertname": "ContainerMemoryNearLimit",
        "namespace": v["ns"],
        "container": v["container"],
        "job": "cadvisor",
        "service": v["app"],
    }
    notes = {
        "summary": f"Container {v['container']} working set is {v['ws']}M of a {v['limit']}M limit",
        "description": f"Container {v['container']} in namespace {v['ns']} is close to its memory limit.",
        "value": f"{v['ws']}M",
        "threshold": f"{v['limit']}M",
    }
    return am(run_id, v, labels, notes)


CONTAINER_MEMORY = Kind(
    name="cadvisor_container_memory",
    source="alertmanager/cadvisor",
    query_en="Is the container near its memory limit?",
    query_zh="容器内存快到上限了吗？",
    make=_cmem_make,
    view=_cmem_view,
    evidence=_cmem_ev,
    wordings=(
        W(
            "en",
            "The working set of container {container} is {ws} MiB against a {limit_gib} GiB limit.",
            ("value=ws:MiB", "limit=limit:MiB", "labels.container=container"),
            ("num:ws", "unit:{limit_gib} GiB>{limit_gib} TiB", "ent:container", "cause"),
            excerpt=1,
        ),
        W(
            "en",
            "{app}'s container {container} in {ns} is close to its memory limit of {limit}M.",
            ("service=app", "labels.namespace=ns", "limit=limit:MiB"),
            ("num:limit", "neg:is close to>is nowhere near", "ent:ns", "concl"),
            excerpt=None,
        ),
        W(
            "zh",
            "容器 {container} 的工作集内存为 {ws} MiB，内存上限 {limit_gib} GiB。",
            ("value=ws:MiB", "limit=limit:MiB"),
            ("swap:ws:limit", "unit:{ws} MiB>{ws} GiB", "cause"),
            excerpt=1,
        ),
        W(
            "zh",
            "{ns} 中 {app} 的容器内存已接近上限（{ws}M / {limit}M）。",
            ("labels.namespace=ns", "service=app", "value=ws:MiB", "limit=limit:MiB"),
            ("num:ws", "neg:已接近>远未接近", "concl"),
            excerpt=None,
        ),
    ),
    entity_suffix={"app": "-svc"},
)
