"""True claims of many shapes over real demo evidence, in English and Chinese.

Why generated, not written: a handful of hand-written claims tests the wording
their author had in mind. Here the evidence is what the demo tools return (the
demo alerts as ``query_metrics`` refs, the demo log records as ``query_logs``
refs, the project's runbooks as ``lookup_knowledge`` refs, written by the same
ref builders the tools use), and the claims are:

* what the rules executor itself writes for every alert and log ref
  (``build_evidence``, both languages);
* alert claims in other wordings (``ALERT_WORDINGS``), each a paraphrase of the
  executor's one with the same facts;
* runbook claims quoting a sentence of a block that carries a number;
* an access log line's status code, path and duration (``tests.support.http_log``);
* the demo scenarios' claims (``tests.support.demo_evidence``).

Every shape is true: the suite holds that each one passes before mutating it.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from typing import Any

from services.executor.claims import build_evidence
from services.executor.tools import refs
from services.executor.tools.demo_env import alerts_at, format_ts, log_rows_at
from services.executor.tools.knowledge_store import load_runbooks
from services.executor.tools.settings import ToolSettings
from services.gatekeeper import parse_invocation
from tests.support import demo_evidence as demo
from tests.support import http_log
from tracebound.events import ExecutionPlan

NOW = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
METRICS_ID, LOGS_ID, KNOWLEDGE_ID = 601, 602, 603
_TOOLS = {METRICS_ID: "query_metrics", LOGS_ID: "query_logs", KNOWLEDGE_ID: "lookup_knowledge"}
_ITEM_END = re.compile(r"(?<=[.;:])\s+-\s+|\s+-\s+(?=[A-Z])")

# Paraphrases of an alert's facts: {service} {alert} {state} {current} {threshold} {duration}
ALERT_WORDINGS: dict[str, tuple[str, ...]] = {
    "en": (
        "{alert} is {state} on {service}: current value {current}, threshold {threshold}.",
        "{service} {alert} alert ({state}) reads {current} against a threshold of {threshold}.",
        "The {alert} alert of {service} has been {state} for {duration}, current {current}.",
        "{service}: {alert} {state}, threshold {threshold}, current {current}, for {duration}.",
    ),
    "zh": (
        "{service} 的 {alert} 告警处于 {state} 状态，当前值为 {current}，阈值为 {threshold}。",
        "{alert} 告警（{service}，{state}）：阈值 {threshold}，当前值 {current}。",
        "{service} 的 {alert} 告警已持续 {duration}，当前值 {current}。",
    ),
}
KNOWLEDGE_WORDINGS = {
    "en": "Runbook {title} ({heading}) says: {item}",
    "zh": "知识库《{title}》的「{heading}」一节写道：{item}",
}


@dataclass(frozen=True)
class Shape:
    """One true claim: its text, type and the bindings that support it."""

    name: str
    lang: str
    source: str  # alert | log | knowledge | demo
    claim_type: str
    text: str
    bindings: tuple[dict[str, Any], ...]
    invocations: str  # "generated", "http" or "demo": which invocation set its bindings cite
    paraphrase: bool = False  # worded here, not by the executor or a demo scenario

    def output(self, text: str | None = None) -> dict[str, Any]:
        """A one-claim executor output with ``text`` (default: the true text)."""
        bindings = [dict(b) for b in self.bindings]
        claim = demo.claim("claim-1", self.claim_type, text or self.text, *bindings)
        return demo.output(claim)


def _invocation(
    inv_id: int, output: dict[str, Any], texts: list[str], array: str
) -> dict[str, Any]:
    return {
        "id": inv_id,
        "tool_name": _TOOLS[inv_id],
        "success": True,
        "output": output,
        "retrieval_details": {
            "evidence_status": "supported",
            "evidence_refs": [
                {"raw_path": f"$.{array}[{i}]", "text": text} for i, text in enumerate(texts)
            ],
        },
    }


@cache
def _tool_outputs() -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    data = ToolSettings.demo()
    alerts = alerts_at(NOW, data.demo_data_dir)
    logs = [
        {
            "timestamp": format_ts(row.ts),
            "level": row.level,
            "service": row.service,
            "instance": row.instance,
            "message": row.message,
            "metrics": row.metrics,
        }
        for row in log_rows_at(NOW, data.demo_data_dir)
    ]
    blocks = [
        {"doc_id": c.doc_id, "title": c.title, "heading": c.heading, "content": c.content}
        for c in load_runbooks(data.runbooks_dir)
    ]
    return alerts, logs, blocks


def generated_invocations() -> list[dict[str, Any]]:
    """The demo alerts, logs and runbooks as the tools record them, in the CLI's shape."""
    alerts, logs, blocks = copy.deepcopy(_tool_outputs())
    return [
        _invocation(METRICS_ID, {"alerts": alerts}, [refs.alert_text(a) for a in alerts], "alerts"),
        _invocation(LOGS_ID, {"logs": logs}, [refs.log_text(r) for r in logs], "logs"),
        _invocation(
            KNOWLEDGE_ID,
            {"evidence_blocks": blocks},
            [refs.knowledge_text(b) for b in blocks],
            "evidence_blocks",
        ),
    ]


def invocations(kind: str) -> list[dict[str, Any]]:
    """A fresh copy of the invocation set a shape cites."""
    if kind == "generated":
        return generated_invocations()
    return http_log.invocations() if kind == "http" else demo.tool_invocations()


def _binding(inv_id: int, raw_path: str, excerpt: str) -> dict[str, Any]:
    return demo.bind(inv_id, raw_path, excerpt, _TOOLS[inv_id])


@cache
def ref_texts(kind: str) -> dict[tuple[int, str], str]:
    """The ref text of every (invocation id, raw_path) of an invocation set."""
    return {
        (inv["id"], ref["raw_path"]): ref["text"]
        for inv in invocations(kind)
        for ref in inv["retrieval_details"]["evidence_refs"]
    }


def _executor_shapes() -> list[Shape]:
    trace = [parse_invocation(raw) for raw in generated_invocations()[:2]]
    out: list[Shape] = []
    for lang in ("en", "zh"):
        evidence = build_evidence(trace, ExecutionPlan(), lang, narrow=True, max_claims=100)
        for n, claim in enumerate(evidence["claims"]):
            [binding] = claim["evidence_bindings"]
            source = "alert" if binding["tool_name"] == "query_metrics" else "log"
            name = f"executor-{source}-{lang}-{n}"
            bindings = (dict(binding),)
            out.append(
                Shape(name, lang, source, "observation", claim["claim_text"], bindings, "generated")
            )
    return out


def _alert_shapes() -> list[Shape]:
    alerts, _, _ = _tool_outputs()
    out: list[Shape] = []
    for i, alert in enumerate(alerts):
        figures = refs.alert_figures(alert)
        values = {
            "service": alert["service"],
            "alert": alert["alert_name"],
            "state": alert["state"],
            "current": figures["current"],
            "threshold": figures["threshold"],
            "duration": alert["duration"],
        }
        binding = _binding(METRICS_ID, f"$.alerts[{i}]", refs.alert_text(alert))
        for lang, wordings in ALERT_WORDINGS.items():
            for w, wording in enumerate(wordings):
                name = f"alert-{alert['alert_name']}-{lang}-{w}"
                text = wording.format(**values)
                out.append(
                    Shape(name, lang, "alert", "observation", text, (binding,), "generated", True)
                )
    return out


def _knowledge_shapes() -> list[Shape]:
    _, _, blocks = _tool_outputs()
    out: list[Shape] = []
    for i, block in enumerate(blocks):
        ref = refs.knowledge_text(block)
        body = ref.split(": ", 1)[1]
        for item in _ITEM_END.split(body.removeprefix("- ")):
            item = item.strip()
            if not re.search(r"\d", item) or len(item) < 20 or item not in ref:
                continue
            binding = _binding(KNOWLEDGE_ID, f"$.evidence_blocks[{i}]", item)
            for lang, wording in KNOWLEDGE_WORDINGS.items():
                text = wording.format(title=block["title"], heading=block["heading"], item=item)
                name = f"knowledge-{block['doc_id']}-{len(out)}-{lang}"
                out.append(
                    Shape(
                        name, lang, "knowledge", "observation", text, (binding,), "generated", True
                    )
                )
    return out


def _demo_shapes() -> list[Shape]:
    out: list[Shape] = []
    for scenario in demo.scenarios():
        for claim in scenario.structured_output["claims"]:
            lang = "en" if claim["claim_text"].isascii() else "zh"
            bindings = tuple(claim["evidence_bindings"])
            name = f"demo-{scenario.name}-{claim['claim_id']}"
            shape = Shape(
                name, lang, "demo", claim["claim_type"], claim["claim_text"], bindings, "demo"
            )
            if shape.text not in {s.text for s in out}:
                out.append(shape)
    return out


# an access log line with a status code, a path and a duration (``tests.support.http_log``)
HTTP_CLAIMS = {
    "en": "user-service returned HTTP 500 for GET /api/v1/users/profile after 5200ms.",
    "zh": "user-service 的 GET /api/v1/users/profile 请求返回 HTTP 500，耗时 5200ms。",
}


def _http_shapes() -> list[Shape]:
    binding = (dict(http_log.HTTP_BINDING),)
    return [
        Shape(f"http-{lang}", lang, "log", "observation", text, binding, "http")
        for lang, text in HTTP_CLAIMS.items()
    ]


@cache
def shapes() -> tuple[Shape, ...]:
    """Every true claim shape, in a fixed order."""
    return (
        *_executor_shapes(),
        *_alert_shapes(),
        *_knowledge_shapes(),
        *_http_shapes(),
        *_demo_shapes(),
    )
