"""The real ingest fuzzed from its own ``/openapi.json``: no 5xx, nothing the document does not say.

Schemathesis generates requests for every operation, valid ones and invalid ones,
with NUL and other control characters allowed in strings, and checks each answer:
no server error, a documented status code and content type, and a body that
matches the documented schema. The ingest runs as a process against the real
broker and a migrated private schema, so the read routes answer from PostgreSQL.
"""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis.checks import not_a_server_error
from schemathesis.core.result import Ok
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from projections.migrate import migrate
from tests.support.ingest_process import ingest_server
from tests.support.projection import Projection

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

MAX_EXAMPLES = 30  # per operation and generation mode
BUDGET_S = 150.0  # the whole run; operations not reached by then are reported
ANSWER_WAIT_S = 0.2  # the longest any generated request may wait for an answer
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


def _bounded_wait(case: Any) -> None:
    """Keep ``wait`` short: an unknown run is waited for as long as the client asks."""
    query = case.query
    if not isinstance(query, dict) or "wait" not in query:
        return
    try:
        if float(query["wait"]) > ANSWER_WAIT_S:
            query["wait"] = ANSWER_WAIT_S
    except (TypeError, ValueError):
        pass  # an invalid wait is refused at once


def _fuzz(operation: Any, mode: schemathesis.GenerationMode, base_url: str) -> str | None:
    """The failure report of one operation in one generation mode, or None."""

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=MAX_EXAMPLES,
        deadline=timedelta(seconds=10),
        suppress_health_check=list(HealthCheck),
        phases=[Phase.explicit, Phase.generate],
        database=None,
        derandomize=True,
    )
    def run(case: Any) -> None:
        _bounded_wait(case)
        case.call_and_validate(base_url=base_url, checks=CHECKS, timeout=30)

    try:
        run()
    except Unsatisfiable:
        return None  # nothing to make invalid: the operation takes no input
    except Exception as exc:  # schemathesis's failure groups carry the whole report
        return f"{operation.label} ({mode.value}): {exc}"
    return None


def test_the_api_keeps_its_document_under_fuzzing(projection: Any, tmp_path: Path) -> None:
    schema_db: Projection = projection()
    with schema_db.conn() as conn:
        migrate(conn)
    env = schema_db.env()
    env["TRACEBOUND_INGEST_ANSWER_WAIT_S"] = str(ANSWER_WAIT_S)
    log = tmp_path / "ingest.log"
    with ingest_server(env, log) as url:
        schema = schemathesis.openapi.from_url(f"{url}/openapi.json")
        schema.config.generation.update(allow_x00=True, codec="utf-8")
        operations = []
        for result in schema.get_all_operations():
            assert isinstance(result, Ok), f"an operation schemathesis cannot read: {result.err()}"
            operations.append(result.ok())
        assert len(operations) >= 15
        failures: list[str] = []
        unreached: list[str] = []
        started = time.monotonic()
        for operation in operations:
            for mode in (
                schemathesis.GenerationMode.POSITIVE,
                schemathesis.GenerationMode.NEGATIVE,
            ):
                if time.monotonic() - started > BUDGET_S:
                    unreached.append(f"{operation.label} ({mode.value})")
                    continue
                failure = _fuzz(operation, mode, url)
                if failure is not None:
                    failures.append(failure)
    assert not failures, "\n\n".join(failures) + f"\n\ningest log:\n{log.read_text()[-4000:]}"
    assert not unreached, f"not fuzzed within {BUDGET_S:g}s: {unreached}"
