# ruff: noqa: E501 - claim wordings and log lines are data, one per line
"""node-exporter alert kinds."""

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
from evals.groundedness.kinds.alert_sources import W, am, base_view, since

# -- node-exporter -----------------------------------------------------------------------


def _host(rng: random.Random, n: Names) -> str:
    return f"{n.word()}-{rng.randint(10, 99)}.{n.word()}.internal:9100"


def _disk_make(rng: random.Random, n: Names) -> Values:
    return {
        "host": _host(rng, n),
        "mount": f"/srv/{n.word()}",
        "device": f"/dev/nvme{rng.randint(0, 3)}n1",
        "avail": round(rng.uniform(2.1, 9.8), 1),
        "thr": 10,
        **since(rng),
    }


def _disk_ev(run_id: str, v: Values) -> dict[str, Any]:
    labels = {
        "alertname": "NodeFilesystemAlmostOutOfSpace",
        "instance": v["host"],
        "mountpoint": v["mount"],
        "device": v["device"],
        "job": "node-exporter",
    }
    notes = {
        "summary": "Filesystem has less than 10% space left.",
        "description": f"Filesystem on {v['device']} at {v['host']} mounted on {v['mount']} has "
        f"only {plain(v['avail'])}% available space left.",
        "value": plain(v["avail"]),
        "threshold": str(v["thr"]),
        "unit": "percent",
    }
    return am(run_id, v, labels, notes)


NODE_DISK = Kind(
    name="node_filesystem_space",
    source="alertmanager/node-exporter",
    query_en="Is the disk full?",
    query_zh="磁盘满了吗？",
    make=_disk_make,
    view=base_view,
    evidence=_disk_ev,
    wordings=(
        W(
            "en",
            "The filesystem mounted on {mount} has only {avail}% space left, under the {thr}% threshold.",
            ("value=avail:percent", "threshold=thr:percent", "labels.mountpoint=mount"),
            ("num:avail", "swap:avail:thr", "cmp:under>over", "cause"),
            excerpt=None,
        ),
        W(
            "en",
            "Free space on {device} at {host} is down to {avail} percent.",
            ("value=avail:percent", "labels.device=device", "labels.instance=host"),
            ("num:avail", "unit:{avail} percent>{avail} GB", "ent:host", "concl"),
            excerpt=2,
        ),
        W(
            "zh",
            "{host} 上挂载点 {mount} 的可用空间只剩 {avail}%，低于 {thr}% 的阈值。",
            (
                "value=avail:percent",
                "threshold=thr:percent",
                "labels.mountpoint=mount",
                "labels.instance=host",
            ),
            ("num:avail", "cmp:低于>高于", "swap:avail:thr", "cause"),
            excerpt=None,
        ),
        W(
            "zh",
            "磁盘 {device} 剩余空间 {avail}%，该告警从 {since} UTC 开始触发。",
            ("value=avail:percent", "labels.device=device", "active_at=since"),
            ("time:since", "num:avail", "unit:{avail}%>{avail} GB", "concl"),
            excerpt=None,
        ),
    ),
    causes={
        "en": ("log rotation being disabled", "an unbounded core dump directory"),
        "zh": ("日志轮转被关闭", "core dump 目录无限增长"),
    },
    conclusions={
        "en": ("the disk will be full within the hour", "the node must be replaced"),
        "zh": ("一小时内磁盘就会写满", "必须更换该节点"),
    },
)


def _cpu_make(rng: random.Random, n: Names) -> Values:
    return {
        "host": _host(rng, n),
        "ratio": round(rng.uniform(0.86, 0.99), 4),
        "thr": 0.85,
        "win": 5,
        **since(rng),
    }


def _cpu_view(v: Values) -> View:
    return {**base_view(v), "ratio_pct": pct(v["ratio"]), "thr_pct": pct(v["thr"])}


def _cpu_ev(run_id: str, v: Values) -> dict[str, Any]:
    labels = {"alertname": "NodeCPUHighUsage", "instance": v["host"], "job": "node-exporter"}
    notes = {
        "summary": f"High CPU usage on {v['host']}",
        "description": f"CPU usage at {v['host']} has been above {pct(v['thr'])} for the last "
        f"{v['win']} minutes, is currently at {pct(v['ratio'])}.",
        "value": plain(v["ratio"]),
    }
    expr = f'1 - avg by (instance) (rate(node_cpu_seconds_total{{mode="idle"}}[{v["win"]}m])) > {v["thr"]}'
    return am(run_id, v, labels, notes, expr=expr)


NODE_CPU = Kind(
    name="node_cpu",
    source="alertmanager/node-exporter",
    query_en="Why is the node CPU high?",
    query_zh="节点 CPU 为什么高？",
    make=_cpu_make,
    view=_cpu_view,
    evidence=_cpu_ev,
    wordings=(
        W(
            "en",
            "CPU utilisation on {host} is {ratio_pct}, above the {thr_pct} threshold.",
            ("value=ratio:ratio", "threshold=thr:ratio", "labels.instance=host"),
            ("num:ratio", "unit:{ratio_pct}>{ratio}%", "cmp:above>below", "cause"),
            excerpt=None,
        ),
        W(
            "en",
            "{host} has run above {thr_pct} CPU for the last {win} minutes.",
            ("threshold=thr:ratio", "window=win:minutes", "labels.instance=host"),
            ("time:win", "ent:host", "neg:has run above>has not run above", "concl"),
            excerpt=2,
        ),
        W(
            "zh",
            "节点 {host} 的 CPU 使用率为 {ratio_pct}，高于 {thr_pct}。",
            ("value=ratio:ratio", "threshold=thr:ratio", "labels.instance=host"),
            ("num:ratio", "swap:ratio:thr", "unit:{ratio_pct}>{ratio}%", "cause"),
            excerpt=None,
        ),
        W(
            "zh",
            "过去 {win} 分钟 {host} 的 CPU 一直高于 {thr_pct}，告警已持续 {dur_zh}。",
            ("window=win:minutes", "threshold=thr:ratio", "duration=dur"),
            ("time:win", "cmp:高于>低于", "concl"),
            excerpt=None,
        ),
    ),
    causes={
        "en": ("a runaway cron job", "kernel soft lockups"),
        "zh": ("失控的定时任务", "内核软锁死"),
    },
)


def _mem_make(rng: random.Random, n: Names) -> Values:
    total = rng.choice((32, 64, 128))
    return {
        "host": _host(rng, n),
        "used": round(rng.uniform(85.2, 97.9), 1),
        "thr": 85,
        "total": total,
        **since(rng),
    }


def _mem_ev(run_id: str, v: Values) -> dict[str, Any]:
    labels = {
        "alertname": "NodeMemoryHighUtilization",
        "instance": v["host"],
        "job": "node-exporter",
    }
    notes = {
        "summary": f"Host {v['host']} is running out of memory.",
        "description": f"Memory is filling up at {v['host']}, {plain(v['used'])}% of "
        f"{v['total']} GiB used (threshold {v['thr']}%).",
        "current_value": plain(v["used"]),
    }
    return am(run_id, v, labels, notes)


NODE_MEMORY = Kind(
    name="node_memory",
    source="alertmanager/node-exporter",
    query_en="Is the host out of memory?",
    query_zh="主机内存是否不足？",
    make=_mem_make,
    view=base_view,
    evidence=_mem_ev,
    wordings=(
        W(
            "en",
            "Memory utilisation on {host} is {used}%, over the {thr}% threshold.",
            ("value=used:percent", "threshold=thr:percent", "labels.instance=host"),
            ("num:used", "swap:used:thr", "cmp:over>under", "cause"),
            excerpt=None,
        ),
        W(
            "en",
            "{host} has {used} percent of its {total} GiB of memory in use.",
            ("value=used:percent", "total=total:GiB", "labels.instance=host"),
            ("num:total", "unit:{total} GiB>{total} MiB", "ent:host", "concl"),
            excerpt=2,
        ),
        W(
            "zh",
            "{host} 内存使用率 {used}%，超过 {thr}% 的阈值。",
            ("value=used:percent", "threshold=thr:percent"),
            ("num:used", "cmp:超过>未超过", "swap:used:thr", "cause"),
            excerpt=None,
        ),
        W(
            "zh",
            "主机 {host} 共 {total} GiB 内存，已用 {used}%，告警自 {since} UTC 起持续触发。",
            ("total=total:GiB", "value=used:percent", "active_at=since"),
            ("time:since", "num:total", "unit:{total} GiB>{total} TiB", "concl"),
            excerpt=None,
        ),
    ),
)
