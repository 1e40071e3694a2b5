# ruff: noqa: E501 - claim wordings and log lines are data, one per line
"""kube-state-metrics alert kinds."""

from __future__ import annotations

import random
from typing import Any

from evals.groundedness.core import (
    Kind,
    Names,
    Values,
    View,
)
from evals.groundedness.kinds.alert_sources import W, am, base_view, since

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
