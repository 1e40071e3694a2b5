"""Log lines counted by message shape: which counts an answer states, and that they are cited."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from services.executor import log_shapes
from services.executor.claim_templates import templates
from services.executor.claims import build_evidence
from services.executor.tools import refs
from services.executor.tools.base import RunContext
from services.executor.tools.logs import LogPage, LogQuery, LogShape, QueryLogsParams, QueryLogsTool
from tests.support.gate import gate_json
from tracebound.events import ExecutionPlan, ToolInvocation

T0, T1 = datetime(2026, 12, 6, 6, 50, tzinfo=UTC), datetime(2026, 12, 6, 7, 3, tzinfo=UTC)
LINE = {
    "timestamp": "2026-12-06 07:03:00",
    "level": "ERROR",
    "service": "claimsdesk",
    "instance": "",
    "message": "Connection is not available, request timed out after 30000ms",
    "metrics": {},
}


class Store:
    """A backend that counts shapes, as VictoriaLogs and the PostgreSQL store do."""

    layer = "victorialogs"

    def __init__(self, shapes: list[LogShape]) -> None:
        self._shapes = shapes

    def search(self, query: LogQuery) -> LogPage:
        return LogPage(records=[LINE], total=1)

    def shapes(self, query: LogQuery) -> list[LogShape]:
        return self._shapes


class LinesOnly:
    """A backend that cannot count shapes (Loki)."""

    layer = "loki"

    def search(self, query: LogQuery) -> LogPage:
        return LogPage(records=[LINE], total=1)


def _invocation(backend: Any) -> ToolInvocation:
    params = QueryLogsParams(query="claimsdesk", service="claimsdesk", shapes=True)
    outcome = QueryLogsTool(backend).run(params, RunContext(run_id="r"))
    return ToolInvocation(
        source_invocation_id=7,
        tool_name="query_logs",
        input_params=params.model_dump(mode="json"),
        output=outcome.output,
        retrieval_details=outcome.retrieval_details,
        duration_ms=1,
        success=outcome.success,
    )


def _paths(inv: ToolInvocation) -> list[str]:
    assert inv.retrieval_details is not None
    return [r.raw_path for r in inv.retrieval_details.evidence_refs]


def _shape(level: str, count: int, message: str = "timed out after <N>ms") -> LogShape:
    return LogShape(message, level, count, T0, T1)


def test_errors_then_warnings_the_most_frequent_first_and_a_few_lines_stay_lines() -> None:
    shapes = [
        _shape("WARN", 900, "slow request took <N> ms"),
        _shape("ERROR", 12, "pool timed out after <N>ms"),
        _shape("ERROR", 40, "pool exhausted (active=<N>)"),
        _shape("ERROR", 3, "rare error <N>"),  # a few lines read better quoted
        _shape("INFO", 80, "request served in <N> ms"),  # routine, not a flood
    ]
    inv = _invocation(Store(shapes))
    stated = log_shapes.stated([inv], "en", ExecutionPlan(calls=()), templates())
    assert [c["claim_text"].split(" lines like ")[0] for c in stated] == [
        "claimsdesk logged 40 ERROR",
        "claimsdesk logged 12 ERROR",
    ]
    flood = [_shape("DEBUG", 48_000, "dump <N> bytes")]
    [claim] = log_shapes.stated(
        [_invocation(Store(flood))], "en", ExecutionPlan(calls=()), templates()
    )
    assert claim["claim_text"].startswith("claimsdesk logged 48000 DEBUG lines like")


def test_a_shape_claim_cites_its_item_and_passes_the_gatekeeper() -> None:
    inv = _invocation(Store([_shape("ERROR", 40)]))
    assert _paths(inv) == ["$.logs[0]", "$.shapes[0]"]
    evidence = build_evidence([inv], ExecutionPlan(calls=()), "en", narrow=False, max_claims=16)
    said = [c for c in evidence["claims"] if " lines like " in c["claim_text"]]
    assert [c["evidence_bindings"][0]["raw_path"] for c in said] == ["$.shapes[0]"]
    invocation = inv.model_dump(mode="json")
    result = gate_json(evidence, [invocation])
    assert result["status"] == "pass", result["errors"]


def test_a_backend_that_cannot_count_says_so_and_its_lines_stand() -> None:
    inv = _invocation(LinesOnly())
    assert inv.success and inv.output["shapes_note"] == "loki does not count message shapes"
    assert _paths(inv) == ["$.logs[0]"]
    assert inv.retrieval_details is not None
    assert refs.log_text(LINE) == inv.retrieval_details.evidence_refs[0].text
