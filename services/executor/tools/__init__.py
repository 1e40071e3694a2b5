"""Evidence tools: query_metrics, query_logs, lookup_knowledge and query_prometheus.

Each tool validates its parameters with its own model, runs against one backend
and returns a :class:`ToolOutcome` whose ``evidence_refs`` are built by code —
the only text a claim may cite. :func:`build_tools` wires them from settings:
metrics from the request's own alerts unless Prometheus (or the demo) is
configured, logs from Loki or VictoriaLogs (or the demo) and otherwise from no backend at all,
and every tool names its backend so each invocation records where it came from.
"""

from __future__ import annotations

from services.executor.tools.base import (
    NO_BACKEND,
    EvidenceTool,
    RunContext,
    ToolBackendError,
    ToolOutcome,
    ToolParams,
    public_url,
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
from services.executor.tools.logs import LogSearch, NoLogBackend, QueryLogsParams, QueryLogsTool
from services.executor.tools.loki import LokiLogSearch
from services.executor.tools.metrics import TOOL_NAME as METRICS
from services.executor.tools.metrics import (
    AlertSource,
    DemoAlertSource,
    QueryMetricsParams,
    QueryMetricsTool,
)
from services.executor.tools.prometheus import PrometheusAlertSource
from services.executor.tools.prometheus_scope import QueryPrometheusParams
from services.executor.tools.query_prometheus import TOOL_NAME as PROMQL
from services.executor.tools.query_prometheus import QueryPrometheusTool
from services.executor.tools.request_alerts import RequestAlertSource
from services.executor.tools.settings import DEMO_ENV, NO_LOGS_BACKEND, ToolSettings
from services.executor.tools.victoria_logs import VictoriaLogsSearch
from tracebound.events import ToolBackend

# Each tool's parameter model by tool name: the one parameter contract, which skill
# files and frozen replays check against too.
PARAMS_MODELS: dict[str, type[ToolParams]] = {
    METRICS: QueryMetricsParams,
    LOGS: QueryLogsParams,
    KNOWLEDGE: LookupKnowledgeParams,
    PROMQL: QueryPrometheusParams,
}


def build_tools(settings: ToolSettings | None = None) -> dict[str, EvidenceTool]:
    """The tools by name, wired to the configured backends.

    Nothing connects here: databases and HTTP backends are reached on the first
    call, so building the tools never fails because a backend is down.
    """
    s = settings if settings is not None else ToolSettings()
    demo_now = s.demo_now

    alerts: AlertSource
    metrics_url = ""
    if s.metrics_backend == "prometheus":
        metrics_url = s.require_url("prometheus")
        alerts = PrometheusAlertSource(metrics_url, s.http_timeout_s)
    elif s.metrics_backend == "demo":
        alerts = DemoAlertSource(lambda: demo_now, s.demo_data_dir)
    else:
        alerts = RequestAlertSource()
    logs: LogSearch
    logs_url = ""
    if s.logs_backend == "loki":
        logs_url = s.require_url("loki")
        logs = LokiLogSearch(logs_url, s.http_timeout_s)
    elif s.logs_backend == "victorialogs":
        logs_url = s.require_url("victorialogs")
        logs = VictoriaLogsSearch(logs_url, s.http_timeout_s)
    elif s.logs_backend == "demo":
        logs = PostgresLogStore(s.dsn, lambda: demo_now, s.demo_data_dir)
    else:
        logs = NoLogBackend(NO_LOGS_BACKEND)
    rules = load_relevance_rules(s.relevance_rules)
    knowledge = KnowledgeStore(s.dsn, s.runbooks_dir, rules.rank_normalization)
    tools: list[EvidenceTool] = [
        QueryMetricsTool(alerts, ToolBackend(name=s.metrics_backend, url=public_url(metrics_url))),
        QueryLogsTool(
            logs, s.logs_region, ToolBackend(name=s.logs_backend, url=public_url(logs_url))
        ),
        LookupKnowledgeTool(knowledge, rules),
    ]
    # Without a Prometheus the PromQL investigation fails visibly, saying what to set.
    url = (s.prometheus_url or "").rstrip("/")
    backend = ToolBackend(name="prometheus" if url else NO_BACKEND, url=public_url(url))
    tools.append(QueryPrometheusTool(url, s.http_timeout_s, backend))
    return {tool.name: tool for tool in tools}


__all__ = [
    "DEMO_ENV",
    "PARAMS_MODELS",
    "EvidenceTool",
    "LookupKnowledgeParams",
    "QueryLogsParams",
    "QueryMetricsParams",
    "QueryPrometheusParams",
    "RunContext",
    "ToolBackendError",
    "ToolOutcome",
    "ToolParams",
    "ToolSettings",
    "build_tools",
]
