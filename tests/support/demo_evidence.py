"""Demo incident: correct executor outputs and the tool invocations they cite.

The narrative: payment-service burns CPU and times out on Redis, order-service
exhausts its HikariCP pool and is OOM-killed, user-service answers slowly on
database timeouts, and a precise query for inventory-service HikariCP logs
returns no evidence. Every scenario here is correct, so the gatekeeper must
pass it; the adversarial tests mutate copies of them.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

METRICS_ID = 517
LOGS_ID = 518
KNOWLEDGE_ID = 519
NO_EVIDENCE_ID = 520

ALERTS: tuple[str, ...] = (
    "HighCPUUsage, service=payment-service, state=firing, current=92%, threshold=80%, "
    "duration=25m, pod=pod-payment-service-7d8f9c6b5-x2k4m, active_at=2026-07-08T22:40:12Z",
    "HighMemoryUsage, service=order-service, state=firing, current=91%, threshold=85%, "
    "jvm_heap=3.8 GB / 4 GB, duration=15m, pod=pod-order-service-5c9d7b8f4-q7n2p, "
    "active_at=2026-07-08T22:50:03Z",
    "SlowResponse, service=user-service, state=firing, p99=4.2s, threshold=3s, duration=10m, "
    "pod=pod-user-service-6b7c8d9e0-m3n8r, active_at=2026-07-08T22:55:41Z",
)

LOGS: tuple[str, ...] = (
    "2026-07-08 23:05:28 ERROR order-service HikariPool-1 - Connection is not available, "
    "request timed out after 30000ms; pool stats active=50/50, idle=0, waiting=23",
    "2026-07-08 23:05:44 WARN order-service HikariPool-1 - Pool stats (total=50, active=50, "
    "idle=0, waiting=23); connection acquisition still blocked",
    "2026-07-08 23:06:02 ERROR order-service java.lang.OutOfMemoryError: Java heap space; "
    "heap used=3.8 GB of 4 GB",
    "2026-07-08 23:06:15 WARN kubelet pod=pod-order-service-5c9d7b8f4-q7n2p reason=OOMKilled "
    "exit_code=137; container restarted, restart_count=3",
    "2026-07-08 23:07:40 ERROR user-service query timeout after 3000ms on user_db "
    "(select profile by user_id); slow queries in last 10m=142",
    "2026-07-08 23:08:02 ERROR payment-service RedisCommandTimeoutException: Command timed out "
    "after 2000ms; host=redis-payment-0:6379",
    "2026-07-08 23:08:19 WARN payment-service Redis call retry 3/3 failed; fallback to database "
    "for idempotency keys",
)

KNOWLEDGE: tuple[str, ...] = (
    "Runbook diagnose-mysql-connection-pool: 'Connection is not available, request timed out' "
    "means every HikariCP connection is in use; compare active connections with "
    "maximumPoolSize and look for long transactions or leaked connections.",
    "Runbook jvm-memory-pressure: when heap usage stays above 85% for more than 10 minutes, "
    "capture a heap dump before restarting the pod and review recent deployments.",
    "Runbook high-cpu: correlate CPU above 80% with request rate, capture hot threads with "
    "jstack, and check recent deployments of the service.",
    "Runbook redis-timeouts: command timeouts above 1000ms usually point to a saturated Redis "
    "instance or network latency; check slowlog and the client pool size.",
)

NO_EVIDENCE_TEXT = (
    "query_logs returned no evidence; evidence_status=no_evidence; "
    "query=inventory-service HikariCP; topic=application-logs; total=0; "
    "message=no matching logs"
)


@dataclass(frozen=True)
class Scenario:
    """One session: a correct executor output and the invocations it cites."""

    name: str
    structured_output: dict[str, Any]
    tool_invocations: list[dict[str, Any]]


def _invocation(
    inv_id: int, tool: str, arguments: dict[str, Any], status: str, refs: list[tuple[str, str]]
) -> dict[str, Any]:
    return {
        "id": inv_id,
        "tool_name": tool,
        "success": True,
        "arguments": arguments,
        "retrieval_details": {
            "evidence_status": status,
            "evidence_refs": [{"raw_path": path, "text": text} for path, text in refs],
        },
    }


def tool_invocations() -> list[dict[str, Any]]:
    """The session's four tool invocations, fresh on every call."""
    return [
        _invocation(
            METRICS_ID,
            "query_metrics",
            {"query": "ALERTS{alertstate='firing'}"},
            "supported",
            [(f"$.alerts[{i}]", text) for i, text in enumerate(ALERTS)],
        ),
        _invocation(
            LOGS_ID,
            "query_logs",
            {"topic": "application-logs", "query": "ERROR OR WARN", "window": "30m"},
            "supported",
            [(f"$.logs[{i}]", text) for i, text in enumerate(LOGS)],
        ),
        _invocation(
            KNOWLEDGE_ID,
            "lookup_knowledge",
            {"query": "connection pool exhaustion OOM high cpu redis timeout"},
            "supported",
            [(f"$.evidence_blocks[{i}]", text) for i, text in enumerate(KNOWLEDGE)],
        ),
        _invocation(
            NO_EVIDENCE_ID,
            "query_logs",
            {"topic": "application-logs", "query": "inventory-service HikariCP"},
            "no_evidence",
            [("$.no_evidence", NO_EVIDENCE_TEXT)],
        ),
    ]


_TOOL_BY_ID = {
    METRICS_ID: "query_metrics",
    LOGS_ID: "query_logs",
    KNOWLEDGE_ID: "lookup_knowledge",
    NO_EVIDENCE_ID: "query_logs",
}


def bind(inv_id: int, raw_path: str, excerpt: str, tool: str | None = None) -> dict[str, Any]:
    """A binding in the executor_evidence_v2 shape (``tool``: default, this session's tool)."""
    return {
        "source_type": "tool_trace",
        "source_id": "",
        "tool_name": tool or _TOOL_BY_ID[inv_id],
        "source_invocation_id": inv_id,
        "raw_path": raw_path,
        "evidence_excerpt": excerpt,
    }


def claim(
    claim_id: str, claim_type: str, text: str, *bindings: dict[str, Any], support: str = "direct"
) -> dict[str, Any]:
    return {
        "claim_id": claim_id,
        "claim_type": claim_type,
        "claim_text": text,
        "support_level": support,
        "evidence_bindings": list(bindings),
    }


def output(*claims: dict[str, Any], **lists: list[Any]) -> dict[str, Any]:
    """An executor_evidence_v2 document."""
    return {
        "answer_version": "executor_evidence_v2",
        "claims": list(claims),
        "hypotheses": lists.get("hypotheses", []),
        "recommended_actions": lists.get("recommended_actions", []),
        "missing_info": lists.get("missing_info", []),
    }


CPU_ALERT = bind(
    METRICS_ID,
    "$.alerts[0]",
    "HighCPUUsage, service=payment-service, state=firing, current=92%, threshold=80%, duration=25m",
)
MEMORY_ALERT = bind(
    METRICS_ID,
    "$.alerts[1]",
    "HighMemoryUsage, service=order-service, state=firing, current=91%, threshold=85%, "
    "jvm_heap=3.8 GB / 4 GB, duration=15m",
)
SLOW_ALERT = bind(
    METRICS_ID,
    "$.alerts[2]",
    "SlowResponse, service=user-service, state=firing, p99=4.2s, threshold=3s, duration=10m",
)
POOL_LOG = bind(
    LOGS_ID,
    "$.logs[0]",
    "order-service HikariPool-1 - Connection is not available, request timed out after "
    "30000ms; pool stats active=50/50, idle=0, waiting=23",
)
POOL_STATS_LOG = bind(LOGS_ID, "$.logs[1]", "Pool stats (total=50, active=50, idle=0, waiting=23)")
OOM_LOG = bind(
    LOGS_ID,
    "$.logs[2]",
    "ERROR order-service java.lang.OutOfMemoryError: Java heap space; heap used=3.8 GB of 4 GB",
)
RESTART_LOG = bind(
    LOGS_ID,
    "$.logs[3]",
    "pod=pod-order-service-5c9d7b8f4-q7n2p reason=OOMKilled exit_code=137; container restarted, "
    "restart_count=3",
)
DB_TIMEOUT_LOG = bind(
    LOGS_ID,
    "$.logs[4]",
    "2026-07-08 23:07:40 ERROR user-service query timeout after 3000ms on user_db",
)
REDIS_TIMEOUT_LOG = bind(
    LOGS_ID,
    "$.logs[5]",
    "payment-service RedisCommandTimeoutException: Command timed out after 2000ms",
)
REDIS_RETRY_LOG = bind(LOGS_ID, "$.logs[6]", "Redis call retry 3/3 failed; fallback to database")
POOL_RUNBOOK = bind(
    KNOWLEDGE_ID,
    "$.evidence_blocks[0]",
    "compare active connections with maximumPoolSize and look for long transactions or leaked "
    "connections",
)
HEAP_RUNBOOK = bind(
    KNOWLEDGE_ID,
    "$.evidence_blocks[1]",
    "capture a heap dump before restarting the pod",
)
CPU_RUNBOOK = bind(
    KNOWLEDGE_ID, "$.evidence_blocks[2]", "capture hot threads with jstack, and check recent"
)
REDIS_RUNBOOK = bind(KNOWLEDGE_ID, "$.evidence_blocks[3]", "check slowlog and the client pool size")
NO_INVENTORY_LOGS = bind(
    NO_EVIDENCE_ID,
    "$.no_evidence",
    "query_logs returned no evidence; evidence_status=no_evidence; "
    "query=inventory-service HikariCP; topic=application-logs; total=0",
)

NEGATIVE_TEXT = "The current query found no HikariCP pool exhaustion logs for inventory-service."


def _scenarios() -> list[Scenario]:
    negative = claim("claim-neg", "negative_observation", NEGATIVE_TEXT, NO_INVENTORY_LOGS)
    return [
        Scenario(
            "narrow-highcpu",
            output(
                claim(
                    "claim-1",
                    "observation",
                    "payment-service has a firing HighCPUUsage alert at 92% CPU.",
                    CPU_ALERT,
                )
            ),
            tool_invocations(),
        ),
        Scenario("narrow-hikari-negative", output(negative), tool_invocations()),
        Scenario(
            "order-service-pool",
            output(
                claim(
                    "claim-1",
                    "observation",
                    "order-service HikariPool-1 is exhausted: 50/50 active, 23 waiting.",
                    POOL_LOG,
                    POOL_STATS_LOG,
                ),
                claim(
                    "claim-2",
                    "symptom",
                    "order-service runs out of JVM heap and its pod was OOM-killed.",
                    MEMORY_ALERT,
                    OOM_LOG,
                    RESTART_LOG,
                ),
                claim(
                    "claim-3",
                    "observation",
                    "The pool runbook says to compare active connections with the pool size.",
                    POOL_RUNBOOK,
                    support="indirect",
                ),
                hypotheses=["a connection leak in order-service holds HikariCP connections"],
                recommended_actions=["collect a thread dump of order-service"],
                missing_info=["database-side session counts"],
            ),
            tool_invocations(),
        ),
        Scenario(
            "user-service-latency",
            output(
                claim(
                    "claim-1",
                    "observation",
                    "user-service P99 latency is 4.2 s against a 3 s threshold.",
                    SLOW_ALERT,
                ),
                claim(
                    "claim-2",
                    "symptom",
                    "user-service database queries time out after 3000 ms.",
                    DB_TIMEOUT_LOG,
                ),
            ),
            tool_invocations(),
        ),
        Scenario(
            "payment-service-cpu-redis",
            output(
                claim(
                    "claim-1",
                    "observation",
                    "payment-service CPU is at 92% and Redis commands time out.",
                    CPU_ALERT,
                    REDIS_TIMEOUT_LOG,
                ),
                claim(
                    "claim-2",
                    "symptom",
                    "payment-service falls back to the database after Redis retries fail.",
                    REDIS_RETRY_LOG,
                ),
                claim(
                    "claim-3",
                    "observation",
                    "Runbooks advise jstack hot threads and a Redis slowlog check.",
                    CPU_RUNBOOK,
                    REDIS_RUNBOOK,
                    support="indirect",
                ),
            ),
            tool_invocations(),
        ),
        Scenario(
            "full-incident",
            output(
                claim("claim-1", "observation", "payment-service CPU alert fires.", CPU_ALERT),
                claim(
                    "claim-2",
                    "root_cause",
                    "order-service exhausts its HikariCP pool and its JVM heap.",
                    MEMORY_ALERT,
                    POOL_LOG,
                    POOL_STATS_LOG,
                    OOM_LOG,
                ),
                claim("claim-3", "symptom", "order-service pod restarted.", RESTART_LOG),
                claim(
                    "claim-4",
                    "observation",
                    "user-service is slow on database timeouts.",
                    SLOW_ALERT,
                    DB_TIMEOUT_LOG,
                ),
                claim(
                    "claim-5",
                    "observation",
                    "payment-service Redis commands time out.",
                    REDIS_TIMEOUT_LOG,
                    REDIS_RETRY_LOG,
                ),
                claim(
                    "claim-6",
                    "observation",
                    "Runbooks cover pool exhaustion, heap pressure, CPU and Redis timeouts.",
                    POOL_RUNBOOK,
                    HEAP_RUNBOOK,
                    CPU_RUNBOOK,
                    REDIS_RUNBOOK,
                    support="indirect",
                ),
                negative,
            ),
            tool_invocations(),
        ),
    ]


def scenarios() -> list[Scenario]:
    """All correct scenarios as fresh deep copies, safe to mutate."""
    return [
        Scenario(s.name, copy.deepcopy(s.structured_output), copy.deepcopy(s.tool_invocations))
        for s in _scenarios()
    ]
