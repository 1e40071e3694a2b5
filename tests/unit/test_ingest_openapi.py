"""The OpenAPI document: complete, self-consistent, and describing the real routes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from starlette.routing import Route

from projections.views import STATUSES, RunList, RunSummary
from services.ingest.runs import RunBuffer
from services.ingest.settings import IngestSettings
from tests.support.openapi import schema_errors
from tests.unit.test_ingest_http import NoDedup, NoPublisher
from tests.unit.test_trace_assemble import sample_trace
from web.app import Ports, create_app
from web.openapi import build_document

METHODS = {"get", "post", "put", "patch", "delete"}


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                yield value
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _refs(item)


def test_document_is_openapi_31_and_json() -> None:
    doc = build_document()
    assert doc["openapi"] == "3.1.0"
    assert doc["info"]["title"] and doc["info"]["version"]
    json.dumps(doc)  # serialisable as served


def test_every_ref_resolves() -> None:
    doc = build_document()
    schemas = doc["components"]["schemas"]
    refs = set(_refs(doc))
    assert refs
    for ref in refs:
        assert ref.startswith("#/components/schemas/"), ref
        assert ref.rsplit("/", 1)[1] in schemas, ref


def test_every_route_is_documented_with_its_errors() -> None:
    app = create_app(
        IngestSettings(), Ports(publisher=NoPublisher(), dedup=NoDedup(), runs=RunBuffer())
    )
    doc = build_document()
    routes = {
        (r.path, m.lower())
        for r in app.routes
        if isinstance(r, Route) and r.path != "/openapi.json"
        for m in (r.methods or set()) - {"HEAD"}
    }
    documented = {(p, m) for p, ops in doc["paths"].items() for m in ops if m in METHODS}
    assert routes == documented
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            assert op["responses"], (path, method)
            if path.startswith("/api/v1"):
                assert op["security"] == [{"bearerAuth": []}]
                assert "401" in op["responses"], (path, method)
            if method == "post" and path.startswith("/api/v1"):
                assert {"400", "413", "422", "503"} <= set(op["responses"])
                assert "200" in op["responses"]


def test_security_scheme_and_public_health() -> None:
    doc = build_document()
    assert doc["components"]["securitySchemes"]["bearerAuth"] == {
        "type": "http",
        "scheme": "bearer",
    }
    assert doc["paths"]["/healthz"]["get"]["security"] == []


def test_schemas_match_the_validating_models() -> None:
    schemas = build_document()["components"]["schemas"]
    webhook = schemas["AlertmanagerWebhook"]
    assert {"status", "receiver", "alerts"} <= set(webhook["required"])
    assert webhook["properties"]["alerts"]["minItems"] == 1
    chat = schemas["ChatRequest"]
    assert chat["properties"]["question"]["maxLength"] == 4000
    assert chat["additionalProperties"] is False
    assert "user_facing_answer" in schemas["Answer"]["properties"]


def test_read_side_schemas_are_generated_and_hold_the_documents() -> None:
    doc = build_document()
    schemas = doc["components"]["schemas"]
    assert set(schemas["Trace"]["required"]) >= {"trace_version", "run", "claims", "timeline"}
    assert schemas["RunSummary"]["properties"]["status"]["enum"] == list(STATUSES)
    assert schema_errors(doc, "Trace", sample_trace()) == []
    row = {k: None for k in RunSummary.model_fields} | {"run_id": "r", "status": "gated"}
    page = RunList(runs=[RunSummary.model_validate(row | {"round": 2})], next_cursor="c")
    assert schema_errors(doc, "RunList", page.document()) == []
    assert schema_errors(doc, "RunList", {"runs": [row], "next_cursor": None})  # round is null


def test_the_schema_check_catches_drift() -> None:
    doc = build_document()
    t = sample_trace()
    t["claims"][0]["undocumented"] = 1
    t["run"]["round"] = "one"
    del t["timeline"]
    errors = schema_errors(doc, "Trace", t)
    assert len(errors) == 3, errors
