# ruff: noqa: E501 - claim wordings and log lines are data, one per line
"""Log kinds of runtimes and databases: JVM GC, PostgreSQL."""

from __future__ import annotations

import random
from typing import Any

from evals.groundedness.core import (
    Kind,
    Names,
    Values,
    View,
)
from evals.groundedness.kinds.alert_sources import W
from evals.groundedness.kinds.log_sources import _at, _at_view, loki


def _gclog_make(rng: random.Random, n: Names) -> Values:
    heap = rng.choice((2048, 4096, 8192))
    before = heap - rng.randint(40, 200)
    return {
        "app": n.name("-svc"),
        "gcid": rng.randint(1000, 9000),
        "heap": heap,
        "before": before,
        "after": before - rng.randint(20, 300),
        "ms": round(rng.uniform(800.0, 4000.0), 3),
        **_at(rng),
    }


def _gclog_view(v: Values) -> View:
    return {
        **_at_view(v),
        "ms_p": f"{v['ms']:.3f}",
        "heap_gib": f"{v['heap'] / 1024:g}",
        "sec": f"{v['ms'] / 1000:.2f}",
    }


def _gclog_ev(run_id: str, v: Values) -> dict[str, Any]:
    line = (
        f"[2026-11-18T{v['at']}:{int(v['s']):02d}.482+0000][gc] GC({v['gcid']}) Pause Full (Allocation Failure) "
        f"{v['before']}M->{v['after']}M({v['heap']}M) {v['ms']:.3f}ms"
    )
    return loki(
        run_id,
        v,
        {"service": v["app"], "level": "info", "pod": f"{v['app']}-2"},
        line,
        "Pause Full",
    )


JVM_GC_LOG = Kind(
    name="jvm_gc_log",
    source="loki/jvm-gc-log",
    query_en="What do the GC logs show?",
    query_zh="GC 日志显示了什么？",
    make=_gclog_make,
    view=_gclog_view,
    evidence=_gclog_ev,
    raw_path="$.logs[0]",
    wordings=(
        W(
            "en",
            "{app} ran a full GC pause (Allocation Failure) of {ms_p} ms.",
            ("service=app", "message.gc=Pause Full", "message.pause=ms:ms"),
            ("num:ms", "unit:{ms_p} ms>{ms_p} s", "ent:app", "cause"),
            excerpt=None,
        ),
        W(
            "en",
            "GC({gcid}) reclaimed heap from {before}M to {after}M of a {heap_gib} GiB heap.",
            (
                "message.gc_id=gcid",
                "message.before=before:MiB",
                "message.after=after:MiB",
                "message.heap=heap:MiB",
            ),
            ("swap:before:after", "num:after", "unit:{heap_gib} GiB>{heap_gib} TiB", "concl"),
            excerpt=None,
        ),
        W(
            "zh",
            "{app} 发生了一次 Full GC，停顿 {ms_p} 毫秒，原因是 Allocation Failure。",
            ("service=app", "message.pause=ms:ms", "message.cause=Allocation Failure"),
            ("num:ms", "neg:发生了>没有发生", "concl"),
            excerpt=None,
        ),
        W(
            "zh",
            "GC({gcid}) 之后堆从 {before}M 降到 {after}M，堆总量 {heap}M。",
            (
                "message.gc_id=gcid",
                "message.before=before:MiB",
                "message.after=after:MiB",
                "message.heap=heap:MiB",
            ),
            ("swap:before:after", "num:heap", "cause"),
            excerpt=None,
        ),
    ),
    causes={"en": ("a memory leak in the session cache",), "zh": ("会话缓存的内存泄漏",)},
)


def _pglog_make(rng: random.Random, n: Names) -> Values:
    return {
        "app": n.name("-db"),
        "pid": rng.randint(10000, 60000),
        "other": rng.randint(10000, 60000),
        "table": f"{n.word()}_entries",
        "ms": round(rng.uniform(1200.0, 9999.0), 3),
        **_at(rng),
    }


def _pglog_view(v: Values) -> View:
    return {**_at_view(v), "ms_p": f"{v['ms']:.3f}", "sec": f"{v['ms'] / 1000:.1f}"}


def _pgdl_ev(run_id: str, v: Values) -> dict[str, Any]:
    line = (
        f"{DAY_STR} {v['at']}:{int(v['s']):02d}.118 UTC [{v['pid']}] ERROR:  deadlock detected "
        f"DETAIL:  Process {v['pid']} waits for ShareLock on transaction 8812; blocked by process {v['other']}. "
        f'CONTEXT:  while updating tuple in relation "{v["table"]}"'
    )
    return loki(
        run_id,
        v,
        {"service": v["app"], "level": "error", "pod": f"{v['app']}-0"},
        line,
        "deadlock detected",
    )


DAY_STR = "2026-11-18"

PG_DEADLOCK_LOG = Kind(
    name="postgres_deadlock_log",
    source="loki/postgres-log",
    query_en="Were there deadlocks in the database log?",
    query_zh="数据库日志里有死锁吗？",
    make=_pglog_make,
    view=_pglog_view,
    evidence=_pgdl_ev,
    raw_path="$.logs[0]",
    wordings=(
        W(
            "en",
            "PostgreSQL on {app} detected a deadlock: process {pid} was blocked by process {other}.",
            (
                "service=app",
                "message.error=deadlock detected",
                "message.pid=pid",
                "message.blocker=other",
            ),
            (
                "swap:pid:other",
                "num:other",
                "neg:detected a deadlock>detected no deadlock",
                "cause",
            ),
            excerpt=None,
        ),
        W(
            "en",
            "The deadlock at {ts} happened while updating a tuple in {table}.",
            ("timestamp=ts", "message.relation=table"),
            ("time:at", "ent:table", "concl"),
            excerpt=None,
        ),
        W(
            "zh",
            "{app} 的 PostgreSQL 日志在 {ts} 报告了死锁，涉及表 {table}。",
            ("service=app", "timestamp=ts", "message.relation=table"),
            ("time:at", "ent:table", "cause"),
            excerpt=None,
        ),
        W(
            "zh",
            "进程 {pid} 在等待 ShareLock，被进程 {other} 阻塞，出现了死锁。",
            ("message.pid=pid", "message.blocker=other", "message.error=deadlock detected"),
            ("swap:pid:other", "num:pid", "concl"),
            excerpt=None,
        ),
    ),
    causes={
        "en": ("two workers updating rows in opposite order",),
        "zh": ("两个 worker 以相反顺序更新行",),
    },
)


def _pgslow_ev(run_id: str, v: Values) -> dict[str, Any]:
    statement = " ".join(
        ("SELECT * FROM", v["table"], "WHERE account_id = $1 ORDER BY created_at DESC")
    )
    line = (
        f"{DAY_STR} {v['at']}:{int(v['s']):02d}.944 UTC [{v['pid']}] LOG:  duration: {v['ms']:.3f} ms  "
        f"statement: {statement}"
    )
    return loki(
        run_id, v, {"service": v["app"], "level": "info", "pod": f"{v['app']}-1"}, line, "duration"
    )


PG_SLOW_LOG = Kind(
    name="postgres_slow_statement_log",
    source="loki/postgres-log",
    query_en="Which queries are slow?",
    query_zh="哪些查询慢？",
    make=_pglog_make,
    view=_pglog_view,
    evidence=_pgslow_ev,
    raw_path="$.logs[0]",
    wordings=(
        W(
            "en",
            "A SELECT on {table} took {ms_p} ms on {app}.",
            ("message.relation=table", "message.duration=ms:ms", "service=app"),
            ("num:ms", "unit:{ms_p} ms>{ms_p} s", "ent:table", "cause"),
            excerpt=None,
        ),
        W(
            "en",
            "At {ts} backend {pid} logged a statement lasting about {sec} seconds.",
            ("timestamp=ts", "message.pid=pid", "message.duration=ms:ms"),
            ("time:at", "num:ms", "concl"),
            excerpt=None,
        ),
        W(
            "zh",
            "{app} 上查询 {table} 的语句耗时 {ms_p} 毫秒。",
            ("service=app", "message.relation=table", "message.duration=ms:ms"),
            ("num:ms", "unit:{ms_p} 毫秒>{ms_p} 秒", "cause"),
            excerpt=None,
        ),
        W(
            "zh",
            "{ts} 进程 {pid} 记录了一条对 {table} 的慢查询。",
            ("timestamp=ts", "message.pid=pid", "message.relation=table"),
            ("num:pid", "ent:table", "concl"),
            excerpt=None,
        ),
    ),
    causes={"en": ("a missing index on account_id",), "zh": ("account_id 上缺少索引",)},
    conclusions={"en": ("the database is undersized",), "zh": ("数据库规格太小",)},
)
