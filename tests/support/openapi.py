"""Checking a response body against a schema of the served OpenAPI document."""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator


def schema_errors(document: dict[str, Any], name: str, body: Any) -> list[str]:
    """Every way ``body`` breaks ``#/components/schemas/<name>`` (empty when it conforms).

    OpenAPI 3.1 schemas are JSON Schema 2020-12; the document's components are the
    root, so every ``$ref`` of the document resolves as it does for a client.
    """
    schema = {"$ref": f"#/components/schemas/{name}", "components": document["components"]}
    validator = Draft202012Validator(schema)
    return [
        f"{'/'.join(map(str, error.absolute_path)) or '(root)'}: {error.message}"
        for error in validator.iter_errors(body)
    ]
