# ruff: noqa: E501 - claim wordings and log lines are data, one per line
"""Redis exporter alert kinds."""

from __future__ import annotations

import random
from typing import Any

from evals.groundedness.core import (
    Kind,
    Names,
    Values,
    View,
    commas,
    kilo,
    pct,
    plain,
)
from evals.groundedness.kinds.alert_sources import W, am, base_view, since

# -- Redis exporter ----------------------------------------------------------------------


def _redis_host(rng: random.Random, n: Names) -> str:
    return f"{n.word()}-redis-{rng.randint(0, 2)}:9121"


def _rmem_make(rng: random.Random, n: Names) -> Values:
    return {
        "inst": _redis_host(rng, n),
        "app": n.name("-cache"),
        "used": round(rng.uniform(0.9, 0.99), 3),
        "max_gb": rng.choice((4, 8, 16)),
        **since(rng),
    }


def _rmem_view(v: Values) -> View:
    return {**base_view(v), "used_pct": pct(v["used"], 1)}


def _rmem_ev(run_id: str, v: Values) -> dict[str, Any]:
    labels = {
        "alertname": "RedisMemoryHigh",
        "instance": v["inst"],
        "service": v["app"],
        "job": "redis-exporter",
    }
    notes = {
        "summary": f"Redis {v['inst']} memory usage is {pct(v['used'], 1)} of maxmemory",
        "description": f"maxmemory is {v['max_gb']}GB; used_memory / maxmemory = {plain(v['used'])}",
        "value": plain(v["used"]),
        "threshold": "0.9",
    }
    return am(run_id, v, labels, notes)


REDIS_MEMORY = Kind(
    name="redis_memory",
    source="alertmanager/redis-exporter",
    query_en="Is Redis out of memory?",
    query_zh="Redis 内存是否快满了？",
    make=_rmem_make,
    view=_rmem_view,
    evidence=_rmem_ev,
    wordings=(
        W(
            "en",
            "Redis {inst} uses {used_pct} of its {max_gb} GB maxmemory.",
            ("value=used:ratio", "maxmemory=max_gb:GB", "labels.instance=inst"),
            ("num:used", "num:max_gb", "unit:{max_gb} GB>{max_gb} MB", "cause"),
            excerpt=None,
        ),
        W(
            "en",
            "Memory of {app} is at {used_pct}, above the 90% threshold.",
            ("service=app", "value=used:ratio", "threshold=0.9"),
            ("cmp:above>below", "ent:app", "unit:{used_pct}>{used}%", "concl"),
            excerpt=None,
        ),
        W(
            "zh",
            "Redis 实例 {inst} 的内存占用达到 maxmemory 的 {used_pct}。",
            ("value=used:ratio", "labels.instance=inst"),
            ("num:used", "unit:{used_pct}>{used}%", "cause"),
            excerpt=1,
        ),
        W(
            "zh",
            "{app} 的 maxmemory 为 {max_gb}GB，已用比例 {used}，超过 0.9 的阈值。",
            ("maxmemory=max_gb:GB", "value=used:ratio", "threshold=0.9"),
            ("num:max_gb", "cmp:超过>低于", "concl"),
            excerpt=None,
        ),
    ),
    conclusions={"en": ("keys have no TTL",), "zh": ("这些 key 都没有设置 TTL",)},
    entity_suffix={"app": "-cache"},
)


def _evict_make(rng: random.Random, n: Names) -> Values:
    return {
        "inst": _redis_host(rng, n),
        "app": n.name("-cache"),
        "evicted": rng.randint(12, 48) * 100,
        "win": 5,
        **since(rng),
    }


def _evict_view(v: Values) -> View:
    return {**base_view(v), "ev_k": kilo(v["evicted"]), "ev_c": commas(v["evicted"])}


def _evict_ev(run_id: str, v: Values) -> dict[str, Any]:
    labels = {
        "alertname": "RedisKeyEvictions",
        "instance": v["inst"],
        "service": v["app"],
        "job": "redis-exporter",
    }
    notes = {
        "summary": f"Redis {v['inst']} is evicting keys",
        "description": f"Redis evicted {kilo(v['evicted'])} keys in the last {v['win']}m.",
        "value": str(v["evicted"]),
    }
    return am(run_id, v, labels, notes, expr=f"increase(redis_evicted_keys_total[{v['win']}m]) > 0")


REDIS_EVICTIONS = Kind(
    name="redis_evictions",
    source="alertmanager/redis-exporter",
    query_en="Is Redis evicting keys?",
    query_zh="Redis 在驱逐 key 吗？",
    make=_evict_make,
    view=_evict_view,
    evidence=_evict_ev,
    wordings=(
        W(
            "en",
            "Redis {inst} evicted {ev_c} keys in the last {win} minutes.",
            ("value=evicted:keys", "window=win:minutes", "labels.instance=inst"),
            ("num:evicted", "time:win", "ent:inst", "cause"),
            excerpt=None,
        ),
        W(
            "en",
            "{app} is evicting keys: {ev_k} evictions over {win}m.",
            ("service=app", "value=evicted:keys", "window=win:minutes"),
            ("num:evicted", "neg:is evicting>is not evicting", "concl"),
            excerpt=None,
        ),
        W(
            "zh",
            "过去 {win} 分钟内 Redis {inst} 驱逐了 {ev_k} 个 key。",
            ("value=evicted:keys", "window=win:minutes"),
            ("num:evicted", "time:win", "cause"),
            excerpt=None,
        ),
        W(
            "zh",
            "{app} 在 {win} 分钟内淘汰了 {ev_c} 个键。",
            ("service=app", "value=evicted:keys", "window=win:minutes"),
            ("ent:app", "num:evicted", "neg:淘汰了>没有淘汰", "concl"),
            excerpt=None,
        ),
    ),
    entity_suffix={"app": "-cache"},
)


def _clients_make(rng: random.Random, n: Names) -> Values:
    return {
        "inst": _redis_host(rng, n),
        "app": n.name("-cache"),
        "clients": rng.randint(9001, 9990),
        "max": 10000,
        "thr": 9000,
        **since(rng),
    }


def _clients_view(v: Values) -> View:
    return {
        **base_view(v),
        "clients_c": commas(v["clients"]),
        "max_c": commas(v["max"]),
        "thr_c": commas(v["thr"]),
    }


def _clients_ev(run_id: str, v: Values) -> dict[str, Any]:
    labels = {
        "alertname": "RedisTooManyConnections",
        "instance": v["inst"],
        "service": v["app"],
        "job": "redis-exporter",
    }
    notes = {
        "summary": "Redis too many connections",
        "description": f"Redis {v['inst']} has {v['clients']} connected clients "
        f"(maxclients {v['max']}, alert above {v['thr']}).",
    }
    return am(run_id, v, labels, notes)


REDIS_CLIENTS = Kind(
    name="redis_connected_clients",
    source="alertmanager/redis-exporter",
    query_en="How many clients are connected to Redis?",
    query_zh="Redis 有多少客户端连接？",
    make=_clients_make,
    view=_clients_view,
    evidence=_clients_ev,
    wordings=(
        W(
            "en",
            "Redis {inst} has {clients_c} connected clients, over the {thr_c} alert threshold.",
            ("value=clients:clients", "threshold=thr:clients", "labels.instance=inst"),
            ("num:clients", "swap:clients:thr", "cmp:over>under", "cause"),
            excerpt=2,
        ),
        W(
            "en",
            "{app} has {clients} clients connected out of a maxclients of {max_c}.",
            ("service=app", "value=clients:clients", "maxclients=max:clients"),
            ("num:max", "swap:clients:max", "ent:app", "concl"),
            excerpt=None,
        ),
        W(
            "zh",
            "Redis {inst} 当前连接数 {clients}，maxclients 为 {max}。",
            ("value=clients:clients", "maxclients=max:clients"),
            ("num:clients", "swap:clients:max", "cause"),
            excerpt=2,
        ),
        W(
            "zh",
            "{app} 的客户端连接数为 {clients_c}，已超过 {thr} 的告警线。",
            ("service=app", "value=clients:clients", "threshold=thr:clients"),
            ("cmp:已超过>尚未达到", "num:clients", "concl"),
            excerpt=None,
        ),
    ),
    causes={"en": ("clients not closing idle connections",), "zh": ("客户端没有关闭空闲连接",)},
    entity_suffix={"app": "-cache"},
)
