# ruff: noqa: E501 - claim wordings and log lines are data, one per line
"""Runbook block kinds."""

from __future__ import annotations

import random
from typing import Any

from evals.groundedness import evidence
from evals.groundedness.core import (
    Kind,
    Names,
    Values,
    View,
    commas,
    kilo,
    wan,
)
from evals.groundedness.kinds.alert_sources import W, base_view

# -- runbooks ---------------------------------------------------------------------------


def _rb_make(rng: random.Random, n: Names) -> Values:
    return {
        "doc": n.name("-replica-lag"),
        "thr": rng.choice((180, 300, 600)),
        "win": rng.choice((10, 15, 20)),
        "job": f"{n.word()}-vacuum",
        "cap": rng.choice((26000, 31000, 42000)),
    }


def _rb_view(v: Values) -> View:
    return {
        **base_view(v),
        "cap_w": wan(v["cap"]),
        "cap_c": commas(v["cap"]),
        "cap_k": kilo(v["cap"]),
    }


def _rb_ev(run_id: str, v: Values) -> dict[str, Any]:
    block = {
        "doc_id": f"runbooks/{v['doc']}.md#checks",
        "title": f"Runbook {v['doc']}",
        "heading": "Checks",
        "content": f"If replication lag stays above {v['thr']} seconds for {v['win']} minutes, "
        f"pause the {v['job']} job on the primary. Do not restart the replica while WAL "
        f"replay is running. Keep the WAL backlog under {v['cap']} segments.",
    }
    return evidence.knowledge(run_id, [block], {"query": "replication lag checks"})


RUNBOOK = Kind(
    name="runbook_block",
    source="knowledge/runbook",
    query_en="What does the runbook say about replica lag?",
    query_zh="Runbook 对复制延迟怎么说？",
    make=_rb_make,
    view=_rb_view,
    evidence=_rb_ev,
    raw_path="$.evidence_blocks[0]",
    wordings=(
        W(
            "en",
            "The runbook says to pause the {job} job when replication lag stays above {thr} seconds for {win} minutes.",
            ("runbook.threshold=thr:seconds", "runbook.window=win:minutes", "runbook.action=job"),
            ("num:thr", "time:win", "cmp:above>below", "ent:job"),
            excerpt=None,
        ),
        W(
            "en",
            "Runbook {doc} warns against restarting the replica while WAL replay is running.",
            ("runbook.title=doc", "runbook.rule=do not restart during WAL replay"),
            ("neg:warns against restarting>recommends restarting", "concl"),
            excerpt=None,
        ),
        W(
            "zh",
            "Runbook 建议：复制延迟超过 {thr} 秒并持续 {win} 分钟时，在主库暂停 {job} 任务。",
            ("runbook.threshold=thr:seconds", "runbook.window=win:minutes", "runbook.action=job"),
            ("num:thr", "time:win", "cmp:超过>低于"),
            excerpt=None,
        ),
        W(
            "zh",
            "Runbook {doc} 要求 WAL 积压保持在 {cap_w}个段以内。",
            ("runbook.title=doc", "runbook.cap=cap:segments"),
            ("num:cap", "cmp:以内>以上", "concl"),
            excerpt=None,
        ),
        W(
            "en",
            "The runbook caps the WAL backlog at {cap_k} segments.",
            ("runbook.cap=cap:segments",),
            ("num:cap", "cause"),
            excerpt=None,
        ),
    ),
    conclusions={
        "en": ("the current lag is caused by the vacuum job",),
        "zh": ("当前延迟就是这个任务造成的",),
    },
)
