# ruff: noqa: E501 - claim wordings and log lines are data, one per line
"""PostgreSQL exporter alert kinds."""

from __future__ import annotations

import random
from typing import Any

from evals.groundedness.core import (
    Kind,
    Names,
    Values,
    View,
    hms_en,
    hms_zh,
    pct,
    plain,
)
from evals.groundedness.kinds.alert_sources import W, am, base_view, prom, since
from services.executor.tools.demo_env import format_duration

# -- PostgreSQL exporter -------------------------------------------------------------------


def _pg_host(rng: random.Random, n: Names) -> str:
    return f"db-{n.word()}-{rng.randint(0, 3)}:9187"


def _repl_make(rng: random.Random, n: Names) -> Values:
    return {
        "inst": _pg_host(rng, n),
        "app": n.name("-db"),
        "lag_s": rng.randint(125, 900),
        "thr": 120,
        "hold": 300,
        **since(rng),
    }


def _repl_view(v: Values) -> View:
    return {
        **base_view(v),
        "lag_en": hms_en(v["lag_s"]),
        "lag_zh": hms_zh(v["lag_s"]),
        "lag_d": format_duration(v["lag_s"]),
    }


def _repl_ev(run_id: str, v: Values) -> dict[str, Any]:
    labels = {
        "alertname": "PostgresqlReplicationLag",
        "instance": v["inst"],
        "service": v["app"],
        "job": "postgres-exporter",
    }
    notes = {
        "summary": f"Replica {v['inst']} is lagging behind its primary",
        "description": f"PostgreSQL replica {v['inst']} is lagging behind its primary.",
    }
    expr = f"pg_replication_lag_seconds > {v['thr']}"
    return prom(
        run_id,
        v,
        labels,
        notes,
        expr=expr,
        lhs="pg_replication_lag_seconds",
        live=str(v["lag_s"]),
        hold_s=v["hold"],
    )


PG_REPLICATION = Kind(
    name="postgres_replication_lag",
    source="prometheus-api/postgres-exporter",
    query_en="Is the replica behind?",
    query_zh="从库延迟多少？",
    make=_repl_make,
    view=_repl_view,
    evidence=_repl_ev,
    wordings=(
        W(
            "en",
            "Replication lag on {inst} is {lag_en}, above the {thr}-second threshold.",
            ("value=lag_s:seconds", "threshold=thr:seconds", "labels.instance=inst"),
            ("num:lag_s", "cmp:above>below", "ent:inst", "cause"),
            excerpt=0,
        ),
        W(
            "en",
            "The replica of {app} is {lag_s} s behind; the rule fires after {hold} seconds over the threshold.",
            ("service=app", "value=lag_s:seconds", "for=hold:seconds"),
            ("swap:lag_s:hold", "num:lag_s", "concl"),
            excerpt=0,
        ),
        W(
            "zh",
            "{app} 的复制延迟为 {lag_zh}，超过 {thr} 秒的阈值。",
            ("service=app", "value=lag_s:seconds", "threshold=thr:seconds"),
            ("num:lag_s", "cmp:超过>低于", "cause"),
            excerpt=0,
        ),
        W(
            "zh",
            "从库 {inst} 落后主库 {lag_d}，告警在 {since} UTC 进入 firing 状态。",
            ("value=lag_s:seconds", "active_at=since"),
            ("time:since", "num:lag_s", "neg:进入 firing>未进入 firing", "concl"),
            excerpt=0,
        ),
    ),
    causes={
        "en": ("a long-running analytics query on the replica",),
        "zh": ("从库上一个长时间运行的分析查询",),
    },
    conclusions={
        "en": ("failing over to this replica now would lose data",),
        "zh": ("现在切换到该从库会丢数据",),
    },
    entity_suffix={"app": "-db"},
)


def _conns_make(rng: random.Random, n: Names) -> Values:
    mx = rng.choice((200, 300, 500))
    return {
        "inst": _pg_host(rng, n),
        "app": n.name("-db"),
        "ratio": round(rng.randint(int(mx * 0.86), mx - 3) / mx, 2),
        "max": mx,
        **since(rng),
    }


def _conns_view(v: Values) -> View:
    return {
        **base_view(v),
        "ratio_pct": pct(v["ratio"], 0),
        "used": str(round(v["ratio"] * v["max"])),
    }


def _conns_ev(run_id: str, v: Values) -> dict[str, Any]:
    labels = {
        "alertname": "PostgresqlTooManyConnections",
        "instance": v["inst"],
        "service": v["app"],
        "job": "postgres-exporter",
    }
    notes = {
        "summary": "PostgreSQL too many connections (> 80%)",
        "description": f"PostgreSQL instance {v['inst']} uses {plain(v['ratio'])} of max_connections ({v['max']}).",
        "value": plain(v["ratio"]),
    }
    return am(run_id, v, labels, notes)


PG_CONNECTIONS = Kind(
    name="postgres_connections",
    source="alertmanager/postgres-exporter",
    query_en="Is the database running out of connections?",
    query_zh="数据库连接数是不是快用完了？",
    make=_conns_make,
    view=_conns_view,
    evidence=_conns_ev,
    wordings=(
        W(
            "en",
            "{inst} is using {ratio_pct} of its {max} max_connections.",
            ("value=ratio:ratio", "max_connections=max", "labels.instance=inst"),
            ("num:ratio", "num:max", "unit:{ratio_pct}>{ratio}%", "cause"),
            excerpt=2,
        ),
        W(
            "en",
            "Connection usage of {app} is above 80% ({ratio} of max_connections).",
            ("service=app", "value=ratio:ratio", "threshold=0.8"),
            ("cmp:above>below", "ent:app", "concl"),
            excerpt=None,
        ),
        W(
            "zh",
            "{inst} 的连接数已占 max_connections（{max}）的 {ratio_pct}。",
            ("value=ratio:ratio", "max_connections=max"),
            ("num:ratio", "unit:{ratio_pct}>{ratio}%", "cause"),
            excerpt=2,
        ),
        W(
            "zh",
            "{app} 的连接使用率超过 80%，当前为 {ratio}。",
            ("service=app", "threshold=0.8", "value=ratio:ratio"),
            ("cmp:超过>不到", "num:ratio", "concl"),
            excerpt=None,
        ),
    ),
    causes={"en": ("a connection leak in the ORM",), "zh": ("ORM 中的连接泄漏",)},
    conclusions={"en": ("the pool is large enough",), "zh": ("连接池已经足够大",)},
    entity_suffix={"app": "-db"},
)


def _deadlock_make(rng: random.Random, n: Names) -> Values:
    return {
        "inst": _pg_host(rng, n),
        "dbname": n.word(),
        "app": n.name("-db"),
        "count": rng.randint(3, 14),
        "win": 10,
        **since(rng),
    }


def _deadlock_ev(run_id: str, v: Values) -> dict[str, Any]:
    labels = {
        "alertname": "PostgresqlDeadlocks",
        "instance": v["inst"],
        "datname": v["dbname"],
        "service": v["app"],
        "job": "postgres-exporter",
    }
    notes = {
        "summary": f"PostgreSQL deadlocks on database {v['dbname']}",
        "description": f"{v['count']} deadlocks detected on {v['dbname']} in the last {v['win']} minutes.",
    }
    return am(
        run_id,
        v,
        labels,
        notes,
        expr=f'increase(pg_stat_database_deadlocks{{datname!~"template.*"}}[{v["win"]}m]) > 1',
    )


PG_DEADLOCKS = Kind(
    name="postgres_deadlocks",
    source="alertmanager/postgres-exporter",
    query_en="Are there deadlocks?",
    query_zh="数据库有死锁吗？",
    make=_deadlock_make,
    view=base_view,
    evidence=_deadlock_ev,
    wordings=(
        W(
            "en",
            "{count} deadlocks were detected on database {dbname} in the last {win} minutes.",
            ("value=count:deadlocks", "labels.datname=dbname", "window=win:minutes"),
            ("num:count", "time:win", "ent:dbname", "cause"),
            excerpt=2,
        ),
        W(
            "en",
            "Database {dbname} of {app} reports deadlocks ({count} in {win} min).",
            ("labels.datname=dbname", "service=app", "value=count:deadlocks", "window=win:minutes"),
            ("neg:reports deadlocks>reports no deadlocks", "num:count", "concl"),
            excerpt=None,
        ),
        W(
            "zh",
            "最近 {win} 分钟数据库 {dbname} 检测到 {count} 次死锁。",
            ("window=win:minutes", "labels.datname=dbname", "value=count:deadlocks"),
            ("num:count", "time:win", "cause"),
            excerpt=2,
        ),
        W(
            "zh",
            "{app} 的 {dbname} 库出现死锁，{win} 分钟内共 {count} 次。",
            ("service=app", "labels.datname=dbname", "value=count:deadlocks"),
            ("ent:dbname", "neg:出现死锁>没有出现死锁", "concl"),
            excerpt=None,
        ),
    ),
    causes={
        "en": ("two jobs updating the same rows in opposite order",),
        "zh": ("两个任务以相反顺序更新同一批行",),
    },
)
