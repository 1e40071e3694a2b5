# ruff: noqa: E501 - claim wordings and log lines are data, one per line
"""Alert kinds: Alertmanager webhook alerts and Prometheus API alerts, by exporter."""

from __future__ import annotations

import hashlib
import random
from typing import Any
from urllib.parse import quote_plus

from evals.groundedness import evidence
from evals.groundedness.core import (
    Kind,
    Names,
    Values,
    View,
    Wording,
    commas,
    hms_en,
    hms_zh,
    kilo,
    pct,
    plain,
)
from services.executor.tools.demo_env import format_duration

W = Wording
DAY = "2026-11-18"


def age_of(v: Values) -> int:
    hh, mm = (int(x) for x in str(v["since"]).split(":"))
    start = hh * 3600 + mm * 60 + int(v["sec"])
    req = evidence.REQUESTED_AT
    return req.hour * 3600 + req.minute * 60 + req.second - start


def base_view(v: Values) -> View:
    out = {k: plain(x) if isinstance(x, float) else str(x) for k, x in v.items()}
    if "since" in v:
        age = age_of(v)
        shown = age - age % 60 if age >= 3600 else age  # format_duration drops seconds
        out.update(
            dur=format_duration(age),
            dur_en=hms_en(shown),
            dur_zh=hms_zh(shown),
            dur_min=str(age // 60),
        )
    return out


def since(rng: random.Random) -> dict[str, Any]:
    hour = rng.choice((5, 6, 7, 8))
    return {"since": f"{hour:02d}:{rng.randint(1, 58):02d}", "sec": rng.randint(1, 59)}


def am(
    run_id: str,
    v: Values,
    labels: dict[str, str],
    notes: dict[str, str],
    *,
    expr: str | None = None,
    filters: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``query_metrics`` over one Alertmanager alert that fired at ``since``."""
    alert = {
        "status": "firing",
        "labels": {"severity": "warning", **labels},
        "annotations": notes,
        "startsAt": f"{DAY}T{v['since']}:{int(v['sec']):02d}Z",
        "endsAt": "0001-01-01T00:00:00Z",
        "generatorURL": (
            f"http://prometheus.{v.get('ns', 'monitoring')}.svc:9090/graph?g0.expr="
            f"{quote_plus(expr)}&g0.tab=1"
            if expr
            else ""
        ),
        "fingerprint": hashlib.sha256(run_id.encode()).hexdigest()[:16],
    }
    params = filters or {"alert_name": labels["alertname"], "state": "firing"}
    return evidence.request_alerts(run_id, [alert], params)


def prom(
    run_id: str,
    v: Values,
    labels: dict[str, str],
    notes: dict[str, str],
    *,
    expr: str,
    lhs: str,
    live: str,
    hold_s: int,
) -> dict[str, Any]:
    """``query_metrics`` over Prometheus' alerts, rules and live query API."""
    active = f"{DAY}T{v['since']}:{int(v['sec']):02d}.{int(v['sec']) * 7 % 1000:03d}Z"
    alert = {
        "labels": {"severity": "warning", **labels},
        "annotations": notes,
        "state": "firing",
        "activeAt": active,
        "value": live,
    }
    rule = {
        "name": labels["alertname"],
        "query": expr,
        "duration": hold_s,
        "labels": {"severity": "warning"},
        "annotations": {},
        "alerts": [alert],
        "type": "alerting",
    }
    series = {k: val for k, val in labels.items() if k not in ("alertname", "severity")}
    api = {
        "/api/v1/alerts": {"alerts": [alert]},
        "/api/v1/rules": {"groups": [{"name": "g", "rules": [rule]}]},
        "query": {
            lhs: {"resultType": "vector", "result": [{"metric": series, "value": [0, live]}]}
        },
    }
    return evidence.prometheus_alerts(run_id, api, {"alert_name": labels["alertname"]})


# -- Kafka exporter ----------------------------------------------------------------


def _lag_make(rng: random.Random, n: Names) -> Values:
    thr = rng.choice((2000, 5000, 10000))
    return {
        "group": n.name("-sync"),
        "topic": f"{n.word()}.{n.word()}.v{rng.randint(1, 4)}",
        "ns": n.name(prefix="ns-"),
        "lag": thr + rng.randint(800, 9000),
        "thr": thr,
        "win": rng.choice((5, 10, 15)),
        **since(rng),
    }


def _lag_view(v: Values) -> View:
    return {**base_view(v), "lag_c": commas(v["lag"]), "thr_c": commas(v["thr"])}


def _lag_ev(run_id: str, v: Values) -> dict[str, Any]:
    labels = {
        "alertname": "KafkaConsumerGroupLagHigh",
        "consumergroup": v["group"],
        "topic": v["topic"],
        "namespace": v["ns"],
        "job": "kafka-exporter",
        "instance": f"10.{v['thr'] % 200}.{v['lag'] % 200}.{v['sec'] + 10}:9308",
    }
    notes = {
        "summary": f"Consumer group {v['group']} lag is {v['lag']} messages (threshold {v['thr']})",
        "description": f"Consumer group {v['group']} on topic {v['topic']} in namespace "
        f"{v['ns']} has been lagging for more than {v['win']} minutes.",
    }
    expr = f'sum by (consumergroup, topic) (kafka_consumergroup_lag{{namespace="{v["ns"]}"}}) > {v["thr"]}'
    return am(run_id, v, labels, notes, expr=expr)


KAFKA_LAG = Kind(
    name="kafka_consumer_lag",
    source="alertmanager/kafka-exporter",
    query_en="Why is the consumer falling behind?",
    query_zh="消费者为什么积压？",
    make=_lag_make,
    view=_lag_view,
    evidence=_lag_ev,
    wordings=(
        W(
            "en",
            "The lag of consumer group {group} is {lag_c} messages, above the {thr_c}-message threshold.",
            ("value=lag:messages", "threshold=thr:messages", "labels.consumergroup=group"),
            ("num:lag", "swap:lag:thr", "ent:group", "cmp:above>below", "cause"),
            excerpt=1,
        ),
        W(
            "en",
            "Consumer group {group} on topic {topic} has been lagging for more than {win} minutes.",
            ("labels.consumergroup=group", "labels.topic=topic", "for=win:minutes"),
            ("time:win", "ent:topic", "neg:has been lagging>has not been lagging", "concl"),
            excerpt=2,
        ),
        W(
            "zh",
            "消费组 {group} 的积压为 {lag} 条，超过阈值 {thr} 条。",
            ("value=lag:messages", "threshold=thr:messages", "labels.consumergroup=group"),
            ("num:lag", "swap:lag:thr", "cmp:超过>低于", "cause"),
            excerpt=1,
        ),
        W(
            "zh",
            "命名空间 {ns} 中，{group} 在 topic {topic} 上的 lag 已持续超过 {win} 分钟。",
            ("labels.namespace=ns", "labels.topic=topic", "for=win:minutes"),
            ("time:win", "ent:ns", "ent:topic", "concl"),
            excerpt=2,
        ),
        W(
            "zh",
            "KafkaConsumerGroupLagHigh 告警自 {since} UTC 起触发，已持续 {dur_zh}。",
            ("active_at=since", "duration=dur"),
            ("time:since", "neg:告警自>告警并未自", "concl"),
            excerpt=0,
        ),
    ),
    causes={
        "en": ("a slow downstream database", "one stuck partition", "a rebalance storm"),
        "zh": ("下游数据库变慢", "某个分区卡住", "频繁的 rebalance"),
    },
    conclusions={
        "en": ("the backlog comes from one slow partition", "adding consumers will clear it"),
        "zh": ("积压来自某一个慢分区", "增加消费者即可消除积压"),
    },
    entity_suffix={"group": "-sync"},
)


# -- kube-state-metrics --------------------------------------------------------------


def _restarts_make(rng: random.Random, n: Names) -> Values:
    app = n.name("-api")
    return {
        "app": app,
        "ns": n.name(prefix="ns-"),
        "pod": f"{app}-{rng.randint(5, 9)}{n.word()[:4]}c{rng.randint(10, 99)}-{n.word()[:5]}",
        "container": n.word(),
        "restarts": rng.randint(4, 19),
        "win": rng.choice((10, 15, 30)),
        **since(rng),
    }


def _restarts_ev(run_id: str, v: Values) -> dict[str, Any]:
    labels = {
        "alertname": "KubePodCrashLooping",
        "namespace": v["ns"],
        "pod": v["pod"],
        "container": v["container"],
        "job": "kube-state-metrics",
        "service": v["app"],
    }
    notes = {
        "summary": "Pod is crash looping.",
        "description": f"Pod {v['ns']}/{v['pod']} ({v['container']}) restarted {v['restarts']} "
        f"times in the last {v['win']} minutes.",
        "value": str(v["restarts"]),
    }
    return am(run_id, v, labels, notes)


POD_RESTARTS = Kind(
    name="kube_pod_restarts",
    source="alertmanager/kube-state-metrics",
    query_en="Is the pod crash looping?",
    query_zh="这个 pod 是不是在反复重启？",
    make=_restarts_make,
    view=base_view,
    evidence=_restarts_ev,
    wordings=(
        W(
            "en",
            "Container {container} of pod {pod} restarted {restarts} times over the last {win} minutes.",
            (
                "value=restarts:restarts",
                "labels.container=container",
                "labels.pod=pod",
                "window=win:minutes",
            ),
            ("num:restarts", "time:win", "ent:container", "cause"),
            excerpt=2,
        ),
        W(
            "en",
            "{app} is crash looping in namespace {ns}: {restarts} restarts in {win} minutes.",
            ("service=app", "labels.namespace=ns", "value=restarts:restarts", "window=win:minutes"),
            ("ent:ns", "num:restarts", "neg:is crash looping>is not crash looping", "concl"),
            excerpt=2,
        ),
        W(
            "zh",
            "{ns} 命名空间下的 pod {pod} 在最近 {win} 分钟内重启了 {restarts} 次。",
            (
                "labels.namespace=ns",
                "labels.pod=pod",
                "value=restarts:restarts",
                "window=win:minutes",
            ),
            ("num:restarts", "time:win", "ent:ns", "cause"),
            excerpt=2,
        ),
        W(
            "zh",
            "服务 {app} 的容器 {container} 处于 CrashLoop 状态，告警已持续 {dur_zh}。",
            ("service=app", "labels.container=container", "duration=dur"),
            ("ent:app", "neg:处于>并未处于", "concl"),
            excerpt=None,
        ),
    ),
    causes={
        "en": ("a bad config map pushed this morning", "the liveness probe timing out"),
        "zh": ("今早推送的错误 ConfigMap", "存活探针超时"),
    },
    entity_suffix={"app": "-api"},
)


def _replicas_make(rng: random.Random, n: Names) -> Values:
    want = rng.randint(4, 12)
    return {
        "deploy": n.name("-worker"),
        "ns": n.name(prefix="ns-"),
        "want": want,
        "have": rng.randint(1, want - 2),
        "win": 15,
        **since(rng),
    }


def _replicas_ev(run_id: str, v: Values) -> dict[str, Any]:
    labels = {
        "alertname": "KubeDeploymentReplicasMismatch",
        "namespace": v["ns"],
        "deployment": v["deploy"],
        "job": "kube-state-metrics",
        "service": v["deploy"],
    }
    notes = {
        "summary": "Deployment has not matched the expected number of replicas.",
        "description": f"Deployment {v['ns']}/{v['deploy']} has {v['have']} available replicas "
        f"of {v['want']} desired for longer than {v['win']} minutes.",
    }
    return am(run_id, v, labels, notes)


DEPLOY_REPLICAS = Kind(
    name="kube_deployment_replicas",
    source="alertmanager/kube-state-metrics",
    query_en="Are all replicas of the deployment up?",
    query_zh="部署的副本都起来了吗？",
    make=_replicas_make,
    view=base_view,
    evidence=_replicas_ev,
    wordings=(
        W(
            "en",
            "Only {have} of {want} desired replicas of {deploy} are available.",
            ("value=have:replicas", "desired=want:replicas", "labels.deployment=deploy"),
            ("num:have", "swap:have:want", "ent:deploy", "cause"),
            excerpt=2,
        ),
        W(
            "en",
            "Deployment {deploy} in {ns} has been short of replicas for longer than {win} minutes ({have}/{want} available).",
            (
                "labels.deployment=deploy",
                "labels.namespace=ns",
                "for=win:minutes",
                "value=have:replicas",
                "desired=want:replicas",
            ),
            ("time:win", "ent:ns", "num:want", "concl"),
            excerpt=2,
        ),
        W(
            "zh",
            "{deploy} 期望 {want} 个副本，目前只有 {have} 个可用。",
            ("labels.deployment=deploy", "desired=want:replicas", "value=have:replicas"),
            ("swap:have:want", "num:have", "neg:只有>没有", "cause"),
            excerpt=2,
        ),
        W(
            "zh",
            "命名空间 {ns} 的 Deployment {deploy} 可用副本数 {have} 个，与期望值不符已超过 {win} 分钟。",
            (
                "labels.namespace=ns",
                "labels.deployment=deploy",
                "value=have:replicas",
                "for=win:minutes",
            ),
            ("time:win", "ent:deploy", "num:have", "concl"),
            excerpt=2,
        ),
    ),
    causes={
        "en": ("an unschedulable node pool", "a failing image pull"),
        "zh": ("节点池无法调度", "镜像拉取失败"),
    },
    conclusions={
        "en": ("the rollout is stuck for good", "the remaining replicas can carry the load"),
        "zh": ("发布已彻底卡死", "剩余副本足以承载流量"),
    },
    entity_suffix={"deploy": "-worker"},
)


def _oom_make(rng: random.Random, n: Names) -> Values:
    app = n.name("-svc")
    return {
        "app": app,
        "ns": n.name(prefix="ns-"),
        "pod": f"{app}-{rng.randint(5, 9)}c{n.word()[:4]}{rng.randint(10, 99)}-{n.word()[:5]}",
        "container": n.word(),
        "limit_mi": rng.choice((512, 1024, 2048, 3072)),
        "restarts": rng.randint(2, 9),
        **since(rng),
    }


def _oom_view(v: Values) -> View:
    gib = v["limit_mi"] / 1024
    return {**base_view(v), "limit_gib": f"{gib:g}"}


def _oom_ev(run_id: str, v: Values) -> dict[str, Any]:
    labels = {
        "alertname": "KubeContainerOOMKilled",
        "namespace": v["ns"],
        "pod": v["pod"],
        "container": v["container"],
        "reason": "OOMKilled",
        "service": v["app"],
    }
    notes = {
        "summary": f"Container {v['container']} in pod {v['pod']} was OOMKilled",
        "description": f"Last terminated reason: OOMKilled (exit code 137), memory limit "
        f"{v['limit_mi']}Mi, restarts {v['restarts']}.",
    }
    return am(run_id, v, labels, notes)


OOM_KILLED = Kind(
    name="kube_oomkilled",
    source="alertmanager/kube-state-metrics",
    query_en="Why does the container keep restarting?",
    query_zh="容器为什么一直重启？",
    make=_oom_make,
    view=_oom_view,
    evidence=_oom_ev,
    wordings=(
        W(
            "en",
            "Container {container} was OOMKilled with exit code 137 against a memory limit of {limit_gib} GiB.",
            (
                "reason=OOMKilled",
                "exit_code=137",
                "limit=limit_mi:MiB",
                "labels.container=container",
            ),
            (
                "unit:{limit_gib} GiB>{limit_gib} TiB",
                "ent:container",
                "neg:was OOMKilled>was not OOMKilled",
                "cause",
            ),
            excerpt=None,
        ),
        W(
            "en",
            "Pod {pod} has restarted {restarts} times; its last termination reason was OOMKilled.",
            ("labels.pod=pod", "restarts=restarts", "reason=OOMKilled"),
            ("num:restarts", "ent:pod", "concl"),
            excerpt=None,
        ),
        W(
            "zh",
            "容器 {container} 因 OOMKilled 被终止（退出码 137），内存上限为 {limit_mi} MiB。",
            (
                "reason=OOMKilled",
                "exit_code=137",
                "limit=limit_mi:MiB",
                "labels.container=container",
            ),
            (
                "num:limit_mi",
                "unit:{limit_mi} MiB>{limit_mi} KiB",
                "neg:因 OOMKilled 被终止>并非因 OOMKilled 被终止",
                "cause",
            ),
            excerpt=2,
        ),
        W(
            "zh",
            "{app} 的 pod {pod} 已重启 {restarts} 次，最近一次是 OOMKilled。",
            ("service=app", "labels.pod=pod", "restarts=restarts", "reason=OOMKilled"),
            ("num:restarts", "ent:app", "concl"),
            excerpt=None,
        ),
    ),
    causes={
        "en": ("a memory leak in the request cache", "an oversized batch import"),
        "zh": ("请求缓存的内存泄漏", "一次过大的批量导入"),
    },
    conclusions={
        "en": ("raising the limit to 8 GiB will fix it", "the JVM heap is set too high"),
        "zh": ("把上限提高到 8 GiB 就能解决", "JVM 堆设置过大"),
    },
    entity_suffix={"app": "-svc"},
)


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
