"""JVM alert kinds."""

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

# -- JVM ---------------------------------------------------------------------------------


def _gc_make(rng: random.Random, n: Names) -> Values:
    return {
        "app": n.name("-svc"),
        "inst": f"{n.word()}-{rng.randint(1, 9)}:8080",
        "pause": round(rng.uniform(61.0, 190.0), 1),
        "thr": 30,
        "win": 5,
        **since(rng),
    }


def _gc_view(v: Values) -> View:
    p = v["pause"]
    m, s = divmod(p, 60)
    return {
        **base_view(v),
        "pause_h": humanize_duration(p),
        "pause_en": f"{int(m)} minute{'s' if int(m) > 1 else ''} {s:.3g} seconds",
        "pause_zh": f"{int(m)} 分 {s:.3g} 秒",
    }


def _gc_ev(run_id: str, v: Values) -> dict[str, Any]:
    labels = {
        "alertname": "JvmGcPauseHigh",
        "service": v["app"],
        "instance": v["inst"],
        "job": "jmx",
    }
    notes = {
        "summary": f"{v['app']} spends too long in GC",
        "description": f"GC pause time of {v['app']} in the last {v['win']}m is "
        f"{humanize_duration(v['pause'])} (threshold {v['thr']}s).",
    }
    return am(run_id, v, labels, notes)


JVM_GC_PAUSE = Kind(
    name="jvm_gc_pause",
    source="alertmanager/jmx-exporter",
    query_en="Is the JVM stuck in GC?",
    query_zh="JVM 是不是卡在 GC 上？",
    make=_gc_make,
    view=_gc_view,
    evidence=_gc_ev,
    wordings=(
        W(
            "en",
            "{app} spent {pause_en} in GC pauses over the last {win} minutes.",
            ("value=pause:seconds", "window=win:minutes", "service=app"),
            ("num:pause", "time:win", "ent:app", "cause"),
            excerpt=2,
        ),
        W(
            "en",
            "GC pause time on {inst} is {pause_h}, over the {thr}s threshold.",
            ("labels.instance=inst", "value=pause:seconds", "threshold=thr:seconds"),
            ("num:pause", "cmp:over>under", "concl"),
            excerpt=None,
        ),
        W(
            "zh",
            "{app} 最近 {win} 分钟的 GC 停顿总计 {pause_zh}。",
            ("service=app", "window=win:minutes", "value=pause:seconds"),
            ("num:pause", "time:win", "cause"),
            excerpt=2,
        ),
        W(
            "zh",
            "实例 {inst} 的 GC 停顿为 {pause_h}，超过了 {thr} 秒的阈值。",
            ("labels.instance=inst", "value=pause:seconds", "threshold=thr:seconds"),
            ("ent:inst", "cmp:超过了>未超过", "concl"),
            excerpt=None,
        ),
    ),
    causes={"en": ("an undersized young generation",), "zh": ("新生代设置过小",)},
    conclusions={"en": ("switching to ZGC will fix it",), "zh": ("换成 ZGC 就能解决",)},
)


def _heap_make(rng: random.Random, n: Names) -> Values:
    mx = rng.choice((2048, 4096, 8192))
    return {
        "app": n.name("-svc"),
        "inst": f"{n.word()}-{rng.randint(1, 9)}:8080",
        "used": round(mx * rng.uniform(0.88, 0.97) / 32) * 32,
        "max": mx,
        **since(rng),
    }


def _heap_view(v: Values) -> View:
    return {
        **base_view(v),
        "max_gib": f"{v['max'] / 1024:g}",
        "share": f"{v['used'] / v['max'] * 100:.0f}",
    }


def _heap_ev(run_id: str, v: Values) -> dict[str, Any]:
    labels = {
        "alertname": "JvmHeapUsageHigh",
        "service": v["app"],
        "instance": v["inst"],
        "area": "heap",
        "job": "jmx",
    }
    notes = {
        "summary": f"JVM heap of {v['app']} is nearly full",
        "description": f"Heap used {v['used']}M of max {v['max']}M.",
        "value": f"{v['used']}M",
    }
    return am(run_id, v, labels, notes)


JVM_HEAP = Kind(
    name="jvm_heap",
    source="alertmanager/jmx-exporter",
    query_en="Is the JVM heap full?",
    query_zh="JVM 堆内存满了吗？",
    make=_heap_make,
    view=_heap_view,
    evidence=_heap_ev,
    wordings=(
        W(
            "en",
            "{app} has {used} MiB of heap in use out of a {max_gib} GiB maximum.",
            ("value=used:MiB", "max=max:MiB", "service=app"),
            ("num:used", "unit:{max_gib} GiB>{max_gib} MiB", "ent:app", "cause"),
            excerpt=None,
        ),
        W(
            "en",
            "Heap on {inst} is nearly full: {used}M used of {max}M.",
            ("labels.instance=inst", "value=used:MiB", "max=max:MiB"),
            ("swap:used:max", "neg:is nearly full>is far from full", "concl"),
            excerpt=None,
        ),
        W(
            "zh",
            "{app} 的堆内存已用 {used} MiB，最大 {max_gib} GiB。",
            ("service=app", "value=used:MiB", "max=max:MiB"),
            ("num:used", "unit:{used} MiB>{used} GiB", "cause"),
            excerpt=None,
        ),
        W(
            "zh",
            "实例 {inst} 的 JVM 堆快满了，已使用 {used}M / {max}M。",
            ("labels.instance=inst", "value=used:MiB", "max=max:MiB"),
            ("swap:used:max", "ent:inst", "concl"),
            excerpt=None,
        ),
    ),
    causes={"en": ("a cache without eviction",), "zh": ("一个没有淘汰策略的缓存",)},
)
