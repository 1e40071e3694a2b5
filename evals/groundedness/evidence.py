"""Tool invocation records built by the executor's own tools from data written here.

Why the real tools: the corpus must show the verifier evidence in exactly the
formats production emits. Each helper feeds invented data to a tool's own
backend port (Alertmanager alerts, the Prometheus HTTP API, Loki streams,
runbook search) and records the outcome the way the executor records it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel

from services.executor.ids import invocation_id
from services.executor.tools.base import RunContext, ToolOutcome
from services.executor.tools.knowledge import (
    LookupKnowledgeParams,
    LookupKnowledgeTool,
    load_relevance_rules,
)
from services.executor.tools.knowledge_store import Candidate, SearchResult
from services.executor.tools.logs import LogPage, LogQuery, QueryLogsParams, QueryLogsTool
from services.executor.tools.loki import parse_streams
from services.executor.tools.metrics import QueryMetricsParams, QueryMetricsTool
from services.executor.tools.prometheus import PrometheusAlertSource
from services.executor.tools.request_alerts import RequestAlertSource
from services.executor.tools.settings import ToolSettings
from tracebound.bounds import bound_json, cut_text
from tracebound.events import Alert, ToolBackend, ToolInvocation

REQUESTED_AT = datetime(2026, 11, 18, 9, 30, 0, tzinfo=UTC)


def record(
    run_id: str, index: int, tool_name: str, params: BaseModel, out: ToolOutcome
) -> dict[str, Any]:
    """The ``ToolInvocation`` the executor records for one tool run, as JSON."""
    details = out.retrieval_details
    invocation = ToolInvocation(
        source_invocation_id=invocation_id(run_id, 1, index),
        tool_name=tool_name,
        input_params=bound_json(params.model_dump(mode="json")),
        output=bound_json(out.output),
        output_preview=out.output_preview,
        retrieval_layer=out.retrieval_layer,
        l0_match_count=out.l0_match_count,
        l1_match_count=out.l1_match_count,
        retrieval_details=details.model_copy(
            update={
                "evidence_refs": tuple(
                    ref.model_copy(update={"text": cut_text(ref.text)})
                    for ref in details.evidence_refs
                )
            }
        ),
        duration_ms=0,
        success=out.success,
        error_message=out.error_message,
        round=1,
        backend=out.backend or ToolBackend(name=str(out.retrieval_layer or "none")),
    )
    dumped: dict[str, Any] = json.loads(invocation.model_dump_json())
    return dumped


def request_alerts(
    run_id: str, alerts: Sequence[Mapping[str, Any]], params: Mapping[str, Any]
) -> dict[str, Any]:
    """``query_metrics`` over the alerts an Alertmanager webhook request carries."""
    ctx = RunContext(
        run_id=run_id,
        alerts=tuple(Alert.model_validate(a) for a in alerts),
        requested_at=REQUESTED_AT,
    )
    tool = QueryMetricsTool(RequestAlertSource())
    p = QueryMetricsParams.model_validate(dict(params))
    return record(run_id, 0, tool.name, p, tool.run(p, ctx))


class _CannedPrometheus(PrometheusAlertSource):
    """The real Prometheus source; only its HTTP GET answers from canned API bodies."""

    def __init__(self, api: Mapping[str, Any]) -> None:
        super().__init__("http://prometheus.invalid:9090", 1.0, now=lambda: REQUESTED_AT)
        self._api = api

    def _get(self, path: str, params: Mapping[str, str]) -> Any:
        if path == "/api/v1/query":
            return self._api["query"][params["query"]]
        return self._api[path]


def prometheus_alerts(
    run_id: str, api: Mapping[str, Any], params: Mapping[str, Any]
) -> dict[str, Any]:
    """``query_metrics`` over Prometheus' alerts, rules and query API (canned bodies)."""
    tool = QueryMetricsTool(_CannedPrometheus(api))
    p = QueryMetricsParams.model_validate(dict(params))
    return record(run_id, 0, tool.name, p, tool.run(p, RunContext(run_id=run_id)))


class _CannedLoki:
    """A Loki answer parsed by the Loki backend's own stream parser."""

    layer = "loki"

    def __init__(self, body: Mapping[str, Any]) -> None:
        self._body = dict(body)

    def search(self, query: LogQuery) -> LogPage:
        entries = sorted(parse_streams(self._body), key=lambda pair: pair[0])
        records = [rec for _moment, rec in entries][-query.limit :]
        return LogPage(records=records, total=len(entries))


def loki_logs(
    run_id: str, streams: Sequence[Mapping[str, Any]], params: Mapping[str, Any]
) -> dict[str, Any]:
    """``query_logs`` answered by Loki with ``streams`` (empty: ``$.no_evidence``)."""
    body = {"status": "success", "data": {"resultType": "streams", "result": list(streams)}}
    tool = QueryLogsTool(_CannedLoki(body))
    p = QueryLogsParams.model_validate(dict(params))
    return record(run_id, 0, tool.name, p, tool.run(p, RunContext(run_id=run_id)))


class _CannedKnowledge:
    layer = "knowledge-base"

    def __init__(self, candidates: Sequence[Candidate]) -> None:
        self._candidates = list(candidates)

    def search(self, text: str, alert_name: str | None) -> SearchResult:
        l0 = sum(1 for c in self._candidates if c.l0)
        return SearchResult(self._candidates, l0, len(self._candidates), fallback=False)


def knowledge(
    run_id: str, blocks: Sequence[Mapping[str, str]], params: Mapping[str, Any]
) -> dict[str, Any]:
    """``lookup_knowledge`` whose store found ``blocks`` (title, heading, content, doc_id)."""
    candidates = [
        Candidate(
            doc_id=b["doc_id"],
            title=b["title"],
            heading=b["heading"],
            content=b["content"],
            rank=0.8,
            coverage=0.9,
            l0=True,
        )
        for b in blocks
    ]
    rules = load_relevance_rules(ToolSettings().relevance_rules)
    tool = LookupKnowledgeTool(_CannedKnowledge(candidates), rules)
    p = LookupKnowledgeParams.model_validate(dict(params))
    return record(run_id, 0, tool.name, p, tool.run(p, RunContext(run_id=run_id)))


def refs_of(invocation: Mapping[str, Any]) -> dict[str, str]:
    """``raw_path`` → ref text of a recorded invocation."""
    refs = invocation["retrieval_details"]["evidence_refs"]
    return {str(r["raw_path"]): str(r["text"]) for r in refs}
