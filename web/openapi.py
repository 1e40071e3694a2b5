"""``GET /openapi.json``: the API described from the very models that validate or serve it.

Component schemas come from pydantic (the request models, the response bodies,
the Answer event, and the read side's :mod:`projections.views`), so the document
cannot drift from the checks or the responses; the paths are written out here
because each one's status codes are a promise to clients (Alertmanager retries
on 5xx, gives up on 4xx).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from projections.run_list import DEFAULT_LIMIT, MAX_LIMIT, MAX_TEXT, MODES, SERVICE, SKILL
from projections.views import STATUSES, VERDICTS, RunList, Trace
from services.ingest.models import AlertmanagerWebhook, ChatRequest
from tracebound import __version__
from tracebound.events import Answer
from web.bodies import ChatAccepted, ErrorBody, Health, RunPending, WebhookAccepted

REF = "#/components/schemas/{model}"
# One server-sent event as read off the stream (OpenAPI 3.1: the schema is per event).
_SSE_EVENT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "event": {"type": "string", "description": "the event type, or `timeout`"},
        "data": {"type": "string", "description": "the event as JSON"},
        "id": {"type": "string", "description": "the event id"},
    },
    "required": ["data"],
}
_MODELS: tuple[type[BaseModel], ...] = (
    AlertmanagerWebhook,
    ChatRequest,
    WebhookAccepted,
    ChatAccepted,
    RunPending,
    ErrorBody,
    Health,
)
# Documents the API serves but never reads: described as they are written out.
_SERVED: tuple[type[BaseModel], ...] = (Answer, RunList, Trace)


def _ref(model: type[BaseModel]) -> dict[str, str]:
    return {"$ref": REF.format(model=model.__name__)}


def _json(model: type[BaseModel], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": _ref(model)}}}


def _errors(*codes: int) -> dict[str, Any]:
    reasons = {
        400: "the body is not JSON, or it nests deeper than 64 levels",
        401: "missing or wrong bearer token",
        404: "no such run (or nothing about it within the wait)",
        413: "the body exceeds the configured size limit, or its event exceeds Kafka's",
        415: "the body is not declared `application/json`",
        422: "the body does not match the schema (control characters and dates outside"
        " 1970-2200 included); `detail` lists each problem",
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


def _query(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {
        "name": name,
        "in": "query",
        "required": False,
        "description": description,
        "schema": schema,
    }


def _run_list_params() -> list[dict[str, Any]]:
    """The query parameters of ``GET /api/v1/runs`` (checked by ``run_list.parse_filter``)."""
    return [
        _query("status", {"type": "string", "enum": list(STATUSES)}, "the run's stage"),
        _query("verdict", {"type": "string", "enum": list(VERDICTS)}, "the final verdict"),
        _query("since", {"type": "string", "format": "date-time"}, "requested at or after"),
        _query("until", {"type": "string", "format": "date-time"}, "requested before"),
        _query(
            "service",
            {"type": "string", "pattern": SERVICE.pattern},
            "a service named in the question or in an alert's service label",
        ),
        _query(
            "limit",
            {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT},
            "runs per page",
        ),
        _query("mode", {"type": "string", "enum": list(MODES)}, "how the run was asked for"),
        _query("skill", {"type": "string", "pattern": SKILL.pattern}, "the planner's skill"),
        _query(
            "q",
            {"type": "string", "maxLength": MAX_TEXT},
            "text the question contains (case-insensitive)",
        ),
        _query("cursor", {"type": "string"}, "next_cursor of the previous page"),
    ]


def _html(description: str) -> dict[str, Any]:
    return {"description": description, "content": {"text/html": {"schema": {"type": "string"}}}}


def _pages(secured: list[dict[str, list[str]]]) -> dict[str, Any]:
    """The browser's pages: the dashboard, the reports and the sign-in that sets the cookie."""
    to_dashboard = {"description": "to the dashboard (`/`)"}
    return {
        "/": {
            "get": {
                "summary": "The runs dashboard (HTML; the run list's filters as a GET form)",
                "security": secured,
                "parameters": _run_list_params(),
                "responses": {
                    "200": _html("the dashboard"),
                    "400": _html("a filter is invalid"),
                    "401": _html("the sign-in form: missing or wrong token"),
                    "503": _html("the read models are unavailable; retry later"),
                },
            }
        },
        "/runs": {
            "get": {
                "summary": "The dashboard under its other name",
                "security": [],
                "responses": {"308": {"description": "to `/` with the same query"}},
            }
        },
        "/login": {
            "get": {
                "summary": "The sign-in form (when a token is set)",
                "security": [],
                "responses": {"200": _html("the form"), "303": to_dashboard},
            },
            "post": {
                "summary": "Trade the token (form field `token`) for an HttpOnly, "
                "SameSite=Strict cookie that the pages and the API accept",
                "security": [],
                "requestBody": {
                    "content": {
                        "application/x-www-form-urlencoded": {
                            "schema": {
                                "type": "object",
                                "properties": {"token": {"type": "string"}},
                                "required": ["token"],
                            }
                        }
                    }
                },
                "responses": {
                    "303": {"description": "signed in (the cookie is set), to the dashboard"},
                    "400": _html("the form has more fields than a token"),
                    "401": _html("not this server's token: the form again"),
                    "413": _html("the form is larger than a token"),
                },
            },
        },
        "/reports": {
            "get": {
                "summary": "Every stored replay and eval report, newest first (HTML)",
                "security": secured,
                "parameters": [
                    _query("before", {"type": "integer", "minimum": 1}, "the next page's report id")
                ],
                "responses": {
                    "200": _html("the list"),
                    "401": _html("the sign-in form: missing or wrong token"),
                    "404": _html("`before` is not a report id"),
                    "503": _html("the read models are unavailable; retry later"),
                },
            }
        },
        "/reports/{report_id}": {
            "get": {
                "summary": "One replay or eval report: what was compared, totals, changed runs"
                " or cases (HTML)",
                "security": secured,
                "parameters": [
                    {
                        "name": "report_id",
                        "in": "path",
                        "required": True,
                        "schema": {"type": "integer", "minimum": 1},
                    }
                ],
                "responses": {
                    "200": _html("the report"),
                    "401": _html("the sign-in form: missing or wrong token"),
                    "404": _html("no such report"),
                    "503": _html("the read models are unavailable; retry later"),
                },
            }
        },
        "/assets/live.js": {
            "get": {
                "summary": "The dashboard's live-refresh script (no data; no authentication)",
                "security": [],
                "responses": {
                    "200": {
                        "description": "the script",
                        "content": {"text/javascript": {"schema": {"type": "string"}}},
                    }
                },
            }
        },
        "/logout": {
            "post": {
                "summary": "Forget the sign-in cookie",
                "security": [],
                "responses": {"303": {"description": "to the sign-in form"}},
            }
        },
    }


def _edge_responses(operation: dict[str, Any]) -> None:
    """What any route may answer before or beside its own: the edge's refusals and the 500."""
    responses = operation["responses"]
    responses.setdefault(
        "403",
        _json(ErrorBody, "the Host or Origin header names another site; `detail` says which"),
    )
    if any(p["in"] == "query" for p in operation.get("parameters", [])):
        responses.setdefault("422", _json(ErrorBody, "a query parameter holds a control character"))
    responses.setdefault(
        "500", _json(ErrorBody, "an unexpected error; `id` is in the server's log with the cause")
    )


def build_document(max_wait_s: float = 120.0) -> dict[str, Any]:
    """The OpenAPI 3.1 document of the ingest API."""
    _, defs = models_json_schema(
        [(m, "validation") for m in _MODELS] + [(m, "serialization") for m in _SERVED],
        ref_template=REF,
    )
    schemas: dict[str, Any] = defs.get("$defs", {})
    secured: list[dict[str, list[str]]] = [{"bearerAuth": []}]
    paths: dict[str, Any] = {
        "/api/v1/alerts": {
            "post": {
                "summary": "Alertmanager webhook (payload version 4)",
                "description": "Firing alerts start one diagnosis run per alert group (or per "
                "alert); a re-send of firing incidents (fingerprint and startsAt) already seen "
                "returns their run. Resolved alerts are recorded on the run they resolve, not "
                "diagnosed. 200 only after Kafka acknowledged.",
                "security": secured,
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": _ref(AlertmanagerWebhook)}},
                },
                "responses": {
                    "200": _json(WebhookAccepted, "runs started or found"),
                    **_errors(400, 401, 413, 415, 422, 503),
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
                    **_errors(400, 401, 413, 415, 422, 503),
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
                        "description": "event stream; the schema describes one event",
                        "content": {"text/event-stream": {"schema": _SSE_EVENT}},
                    },
                    **_errors(401, 422),
                },
            }
        },
        "/api/v1/runs": {
            "get": {
                "summary": "Runs from the read model, newest request first (keyset pages)",
                "security": secured,
                "parameters": _run_list_params(),
                "responses": {
                    "200": _json(RunList, "one page of runs"),
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
                    "200": _json(Trace, "the trace"),
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
        **_pages(secured),
        "/healthz": {
            "get": {
                "summary": "Liveness (no authentication)",
                "security": [],
                "responses": {"200": _json(Health, "the service is up")},
            }
        },
    }
    for operations in paths.values():
        for operation in operations.values():
            _edge_responses(operation)
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
