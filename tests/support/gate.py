"""The gatekeeper check over invocations written in the CLI's shape, as tests write them.

Tests build and edit invocations as plain JSON objects (the shape of
``tracebound gatekeeper check``); the check takes ``ToolInvocation`` records, so
these helpers parse them exactly as the CLI does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from services.gatekeeper import CheckOutcome, Ruleset, check, default_ruleset, parse_invocation
from services.verifier import VerifierInput
from tests.support.demo_evidence import Scenario, scenarios, tool_invocations
from tracebound.events import ToolInvocation


def records(invocations: Sequence[Mapping[str, Any]]) -> tuple[ToolInvocation, ...]:
    """The invocations as the records the check takes."""
    return tuple(parse_invocation(raw) for raw in invocations)


def gate(
    so: Any, invocations: Sequence[Mapping[str, Any]], rs: Ruleset | None = None
) -> CheckOutcome:
    """The check of ``so`` against ``invocations`` under ``rs`` (default: the repository's)."""
    return check(so, records(invocations), rs or default_ruleset())


def gate_json(
    so: Any, invocations: Sequence[Mapping[str, Any]], rs: Ruleset | None = None
) -> dict[str, Any]:
    """The ``gatekeeper_result`` as the CLI prints it."""
    result: dict[str, Any] = gate(so, invocations, rs).result.model_dump(mode="json")
    return result


def scenario(name: str) -> Scenario:
    """A fresh copy of the named demo scenario."""
    return next(s for s in scenarios() if s.name == name)


def first_binding(s: Scenario, claim: int = 0, binding: int = 0) -> dict[str, Any]:
    """A binding of the scenario's output, to edit in place."""
    bindings: list[dict[str, Any]] = s.structured_output["claims"][claim]["evidence_bindings"]
    return bindings[binding]


def assert_fails(result: dict[str, Any], severity: str, *rules: str) -> None:
    """``result`` failed with ``severity`` and (at least) ``rules``."""
    assert result["status"] == "fail"
    assert result["severity"] == severity
    for rule in rules:
        assert rule in result["failed_rules"], result["errors"]


def verifier_input(
    so: dict[str, Any] | None,
    invocations: Sequence[Mapping[str, Any]] | None = None,
    **extra: Any,
) -> VerifierInput:
    """The verifier's input for ``so`` after the gatekeeper checked it (default: demo tools)."""
    checked = gate(so, invocations if invocations is not None else tool_invocations())
    data: dict[str, Any] = {
        "original_query": "Is payment-service firing HighCPUUsage?",
        "executor_final_answer": "",
        "executor_structured_output": checked.structured_output,
        "executor_output_parse_status": {"status": "valid", "detail": "parsed"},
        "tool_trace_summary": [],
        "gatekeeper_result": checked.result,
        "retry_context": None,
    }
    data.update(extra)
    return VerifierInput.model_validate(data)
