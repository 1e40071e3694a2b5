"""Evidence tools: query_metrics, query_logs and lookup_knowledge.

Each tool validates its parameters with its own model, runs against one backend
(the embedded demo environment by default, Prometheus or Loki when configured)
and returns a :class:`ToolOutcome` whose ``evidence_refs`` are built by code —
the only text a claim may cite. :func:`build_tools` wires them from settings.
"""

from __future__ import annotations

from services.executor.tools.base import (
    EvidenceTool,
    RunContext,
    ToolBackendError,
    ToolOutcome,
    ToolParams,
)
from services.executor.tools.knowledge import TOOL_NAME as KNOWLEDGE
from services.executor.tools.knowledge import (
    LookupKnowledgeParams,
    LookupKnowledgeTool,
    load_relevance_rules,
)
from services.executor.tools.knowledge_store import KnowledgeStore
from services.executor.tools.log_store import PostgresLogStore
from services.executor.tools.logs import TOOL_NAME as LOGS
from services.executor.tools.logs import LogSearch, QueryLogsParams, QueryLogsTool
from services.executor.tools.loki import LokiLogSearch
from services.executor.tools.metrics import TOOL_NAME as METRICS
from services.executor.tools.metrics import (
    AlertSource,
    DemoAlertSource,
    QueryMetricsParams,
    QueryMetricsTool,
)
from services.executor.tools.prometheus import PrometheusAlertSource
from services.executor.tools.settings import ToolSettings

# Each tool's parameter model by tool name: the one parameter contract, which skill
# files and frozen replays check against too.
PARAMS_MODELS: dict[str, type[ToolParams]] = {
    METRICS: QueryMetricsParams,
    LOGS: QueryLogsParams,
    KNOWLEDGE: LookupKnowledgeParams,
}


def build_tools(settings: ToolSettings | None = None) -> dict[str, EvidenceTool]:
    """The three tools by name, wired to the configured backends.

    Nothing connects here: databases and HTTP backends are reached on the first
    call, so building the tools never fails because a backend is down.
    """
    s = settings if settings is not None else ToolSettings()
    demo_now = s.demo_now

    alerts: AlertSource
    if s.metrics_backend == "prometheus":
        alerts = PrometheusAlertSource(s.require_url("prometheus"), s.http_timeout_s)
    else:
        alerts = DemoAlertSource(lambda: demo_now, s.demo_data_dir)
    logs: LogSearch
    if s.logs_backend == "loki":
        logs = LokiLogSearch(s.require_url("loki"), s.http_timeout_s)
    else:
        logs = PostgresLogStore(s.dsn, lambda: demo_now, s.demo_data_dir)
    rules = load_relevance_rules(s.relevance_rules)
    knowledge = KnowledgeStore(s.dsn, s.runbooks_dir, rules.rank_normalization)
    tools: list[EvidenceTool] = [
        QueryMetricsTool(alerts),
        QueryLogsTool(logs, region=s.logs_region),
        LookupKnowledgeTool(knowledge, rules),
    ]
    return {tool.name: tool for tool in tools}


__all__ = [
    "PARAMS_MODELS",
    "EvidenceTool",
    "LookupKnowledgeParams",
    "QueryLogsParams",
    "QueryMetricsParams",
    "RunContext",
    "ToolBackendError",
    "ToolOutcome",
    "ToolParams",
    "ToolSettings",
    "build_tools",
]
