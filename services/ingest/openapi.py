"""``GET /openapi.json``: the API described from the very models that validate it.

Component schemas come from pydantic, so the document cannot drift from the
checks; the paths are written out here because each one's status codes are a
promise to clients (Alertmanager retries on 5xx, gives up on 4xx).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from projections import trace_openapi
from services.ingest.models import (
    AlertmanagerWebhook,
    ChatAccepted,
    ChatRequest,
    ErrorBody,
    Health,
    RunPending,
    WebhookAccepted,
)
from tracebound import __version__
from tracebound.events import Answer

REF = "#/components/schemas/{model}"
_MODELS: tuple[type[BaseModel], ...] = (
    AlertmanagerWebhook,
    ChatRequest,
    WebhookAccepted,
    ChatAccepted,
    RunPending,
    ErrorBody,
    Health,
)


def _ref(model: type[BaseModel]) -> dict[str, str]:
    return {"$ref": REF.format(model=model.__name__)}


def _json(model: type[BaseModel], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": _ref(model)}}}


def _json_ref(name: str, description: str) -> dict[str, Any]:
    schema = {"$ref": REF.format(model=name)}
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _errors(*codes: int) -> dict[str, Any]:
    reasons = {
        400: "the body is not JSON",
        401: "missing or wrong bearer token",
        404: "no such run (or nothing about it within the wait)",
        413: "the body exceeds the configured size limit",
        422: "the body does not match the schema; `detail` lists each problem",
        503: "Kafka or PostgreSQL did not accept the request; retry later",
    }
    return {str(code): _json(ErrorBody, reasons[code]) for code in codes}


def _run_id_param() -> dict[str, Any]:
    return {"name": "run_id", "in": "path", "required": True, "schema": {"type": "string"}}


def _wait_param(limit: float) -> dict[str, Any]:
    return {
        "name": "wait",
        "in": "query",
        "required": False,
        "description": "seconds to wait for the answer",
        "schema": {"type": "number", "minimum": 0, "maximum": limit},
    }


def build_document(max_wait_s: float = 120.0) -> dict[str, Any]:
    """The OpenAPI 3.1 document of the ingest API."""
    _, defs = models_json_schema(
        [(m, "validation") for m in _MODELS] + [(Answer, "serialization")], ref_template=REF
    )
    schemas: dict[str, Any] = defs.get("$defs", {}) | trace_openapi.SCHEMAS
    secured: list[dict[str, list[str]]] = [{"bearerAuth": []}]
    paths: dict[str, Any] = {
        "/api/v1/alerts": {
            "post": {
                "summary": "Alertmanager webhook (payload version 4)",
                "description": "Firing alerts start one diagnosis run per alert group (or per "
                "alert); a re-send of the same firing group inside the dedup window returns the "
                "existing run. Resolved alerts are recorded, not diagnosed. 200 only after Kafka "
                "acknowledged.",
                "security": secured,
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": _ref(AlertmanagerWebhook)}},
                },
                "responses": {
                    "200": _json(WebhookAccepted, "runs started or found"),
                    **_errors(400, 401, 413, 422, 503),
                },
            }
        },
        "/api/v1/chat": {
            "post": {
                "summary": "Ask a question; returns the run id at once",
                "security": secured,
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": _ref(ChatRequest)}},
                },
                "responses": {
                    "200": _json(ChatAccepted, "the question is a run"),
                    **_errors(400, 401, 413, 422, 503),
                },
            }
        },
        "/api/v1/runs/{run_id}/answer": {
            "get": {
                "summary": "The run's Answer event, waiting up to `wait` seconds",
                "security": secured,
                "parameters": [_run_id_param(), _wait_param(max_wait_s)],
                "responses": {
                    "200": _json(Answer, "the Answer event of the run"),
                    "202": _json(RunPending, "the run is known but not answered yet"),
                    **_errors(401, 404, 422),
                },
            }
        },
        "/api/v1/runs/{run_id}/events": {
            "get": {
                "summary": "Server-sent events: every event of the run, until its Answer",
                "description": "One `event: <EventType>` and `data: <event JSON>` per event; "
                "events already seen come first; the stream ends after the Answer or the wait.",
                "security": secured,
                "parameters": [_run_id_param(), _wait_param(max_wait_s)],
                "responses": {
                    "200": {
                        "description": "event stream",
                        "content": {"text/event-stream": {"schema": {"type": "string"}}},
                    },
                    **_errors(401, 422),
                },
            }
        },
        "/api/v1/runs": {
            "get": {
                "summary": "Runs from the read model, newest request first (keyset pages)",
                "security": secured,
                "parameters": trace_openapi.openapi_parameters(),
                "responses": {
                    "200": _json_ref("RunList", "one page of runs"),
                    "400": _json(ErrorBody, "a query parameter is invalid; `detail` names it"),
                    **_errors(401),
                    "503": _json(ErrorBody, "the read models are unavailable; retry later"),
                },
            }
        },
        "/api/v1/runs/{run_id}/trace": {
            "get": {
                "summary": "The run's trace: claims, bindings, gatekeeper, verifier, answer",
                "description": "Answers the replay questions: which claims the executor made, "
                "which source_invocation_id + raw_path + evidence_excerpt each cites next to the "
                "ref text the invocation recorded, whether the gatekeeper passed or back-filled, "
                "how the verifier judged, what the composer said, with timings.",
                "security": secured,
                "parameters": [_run_id_param()],
                "responses": {
                    "200": _json_ref("Trace", "the trace"),
                    **_errors(401),
                    "404": _json(ErrorBody, "no such run in the read model"),
                    "422": _json(ErrorBody, "the run id is malformed"),
                    "503": _json(ErrorBody, "the read models are unavailable; retry later"),
                },
            }
        },
        "/runs/{run_id}": {
            "get": {
                "summary": "The trace page of a run (HTML; needs the token when one is set)",
                "security": secured,
                "parameters": [_run_id_param()],
                "responses": {
                    "200": {
                        "description": "the trace page",
                        "content": {"text/html": {"schema": {"type": "string"}}},
                    },
                    "401": {"description": "missing or wrong bearer token"},
                    "404": {"description": "no such run in the read model"},
                    "503": {"description": "the read models are unavailable; retry later"},
                },
            }
        },
        "/healthz": {
            "get": {
                "summary": "Liveness (no authentication)",
                "security": [],
                "responses": {"200": _json(Health, "the service is up")},
            }
        },
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "tracebound ingest",
            "version": __version__,
            "description": "Alertmanager webhook and chat API of tracebound.",
        },
        "servers": [{"url": "/"}],
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearerAuth": {"type": "http", "scheme": "bearer"}},
        },
        "security": secured,
    }
