# ruff: noqa: E501 - claim wordings and log lines are data, one per line
"""Kafka exporter alert kinds."""

from __future__ import annotations

import random
from typing import Any

from evals.groundedness.core import (
    Kind,
    Names,
    Values,
    View,
    commas,
)
from evals.groundedness.kinds.alert_sources import W, am, base_view, since

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
