"""The OpenAPI pieces of the runs and trace API: schemas and query parameters."""

from __future__ import annotations

from typing import Any

from projections.run_list import DEFAULT_LIMIT, MAX_LIMIT, SERVICE
from projections.trace import STATUSES, TRACE_VERSION, VERDICTS

_NULLABLE_STRING = {"type": ["string", "null"]}
_STATUS = {"type": "string", "description": "gatekeeper outcome: pass, fail, backfilled, ..."}
SCHEMAS: dict[str, Any] = {
    "RunSummary": {
        "type": "object",
        "required": ["run_id", "status"],
        "properties": {
            "run_id": {"type": "string"},
            "session_id": _NULLABLE_STRING,
            "mode": _NULLABLE_STRING,
            "query": _NULLABLE_STRING,
            "status": {"type": "string", "enum": list(STATUSES)},
            "verdict": {"type": ["string", "null"], "enum": [*VERDICTS, None]},
            "final_status": _NULLABLE_STRING,
            "round": {"type": "integer"},
            "selected_skill": _NULLABLE_STRING,
            "requested_at": {"type": ["string", "null"], "format": "date-time"},
            "latency_ms": {"type": ["integer", "null"]},
            "token_count": {"type": ["integer", "null"]},
            "updated_at": {"type": ["string", "null"], "format": "date-time"},
        },
    },
    "RunList": {
        "type": "object",
        "required": ["runs", "next_cursor"],
        "properties": {
            "runs": {"type": "array", "items": {"$ref": "#/components/schemas/RunSummary"}},
            "next_cursor": {
                "type": ["string", "null"],
                "description": "pass as `cursor` for the next page; null on the last page",
            },
        },
    },
    "TraceBinding": {
        "type": "object",
        "properties": {
            "binding_index": {"type": "integer"},
            "tool_name": _NULLABLE_STRING,
            "source_invocation_id": {"type": ["integer", "null"]},
            "raw_path": _NULLABLE_STRING,
            "evidence_excerpt": _NULLABLE_STRING,
            "recorded_ref_text": {
                "type": ["string", "null"],
                "description": "the ref text the invocation recorded for raw_path",
            },
            "recorded_ref_status": {
                "type": "string",
                "enum": ["found", "no_ref", "no_invocation", "unbound"],
            },
            "gatekeeper": {
                "type": "object",
                "properties": {
                    "status": _STATUS,
                    "rule": _NULLABLE_STRING,
                    "reason": _NULLABLE_STRING,
                    "warnings": {"type": "array", "items": {"type": "object"}},
                    "errors": {"type": "array", "items": {"type": "object"}},
                },
            },
            "executor_cited": {
                "type": "object",
                "description": "what the executor cited, when the gatekeeper back-filled it",
            },
        },
    },
    "TraceClaim": {
        "type": "object",
        "properties": {
            "claim_id": {"type": "string"},
            "claim_type": _NULLABLE_STRING,
            "claim_text": _NULLABLE_STRING,
            "bindings": {"type": "array", "items": {"$ref": "#/components/schemas/TraceBinding"}},
            "gatekeeper": {"type": "object", "properties": {"status": _STATUS}},
            "verifier": {
                "type": ["object", "null"],
                "properties": {
                    "status": {
                        "type": "string",
                        "enum": ["SUPPORTED", "REFUTED", "NOT_ENOUGH_INFO"],
                    },
                    "reason": {"type": "string"},
                    "facts": {"type": "array", "items": {"type": "object"}},
                },
            },
        },
    },
    "Trace": {
        "type": "object",
        "required": ["trace_version", "run", "timeline", "claims", "tool_invocations"],
        "properties": {
            "trace_version": {"type": "string", "const": TRACE_VERSION},
            "run": {"type": "object", "description": "request, plan, status, verdict, latency"},
            "timeline": {
                "type": "array",
                "description": "stages in pipeline order with first/last event time and offsets",
                "items": {"type": "object"},
            },
            "tokens": {"type": "object", "description": "total and per agent step"},
            "executor": {"type": "object"},
            "claims": {"type": "array", "items": {"$ref": "#/components/schemas/TraceClaim"}},
            "gatekeeper": {
                "type": ["object", "null"],
                "description": "status, severity, rule_set_version, failed_rules",
            },
            "verifier": {
                "type": ["object", "null"],
                "description": "verdict, groundedness_score, rationale, mode",
            },
            "answer": {
                "type": ["object", "null"],
                "description": "the composer's answer and guard result (ok, violations, replaced)",
            },
            "tool_invocations": {"type": "array", "items": {"type": "object"}},
            "agent_steps": {"type": "array", "items": {"type": "object"}},
        },
    },
}


def openapi_parameters() -> list[dict[str, Any]]:
    """The query parameters of ``GET /api/v1/runs``."""

    def param(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
        return {
            "name": name,
            "in": "query",
            "required": False,
            "description": description,
            "schema": schema,
        }

    return [
        param("status", {"type": "string", "enum": list(STATUSES)}, "the run's stage"),
        param("verdict", {"type": "string", "enum": list(VERDICTS)}, "the final verdict"),
        param("since", {"type": "string", "format": "date-time"}, "requested at or after"),
        param("until", {"type": "string", "format": "date-time"}, "requested before"),
        param(
            "service",
            {"type": "string", "pattern": SERVICE.pattern},
            "a service named in the question or in an alert's service label",
        ),
        param(
            "limit",
            {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT},
            "runs per page",
        ),
        param("cursor", {"type": "string"}, "next_cursor of the previous page"),
    ]
