"""A demo round with one more log ref, an HTTP 500 with its duration, and a one-claim verdict.

Why shared: the digit-token and bound-fact tests judge edited claims against the
same true excerpt, through the gatekeeper and the verifier.
"""

from __future__ import annotations

from typing import Any

from services.verifier import verify
from tests.support import demo_evidence as demo
from tests.support.gate import verifier_input
from tests.support.rulebook import PHRASES, RULES

HTTP_LOG = (
    "2026-07-08 23:07:41 ERROR user-service HTTP 500 GET /api/v1/users/profile duration=5200ms"
)
HTTP_EXCERPT = "user-service HTTP 500 GET /api/v1/users/profile duration=5200ms"
HTTP_PATH = f"$.logs[{len(demo.LOGS)}]"
HTTP_BINDING = demo.bind(demo.LOGS_ID, HTTP_PATH, HTTP_EXCERPT)


def invocations() -> list[dict[str, Any]]:
    """The demo tool invocations with the HTTP log appended to the logs."""
    result = demo.tool_invocations()
    [logs] = [i for i in result if i["id"] == demo.LOGS_ID]
    logs["retrieval_details"]["evidence_refs"].append({"raw_path": HTTP_PATH, "text": HTTP_LOG})
    return result


def verdict(text: str, binding: dict[str, Any]) -> tuple[str, str]:
    """(round verdict, claim status) of one observation citing ``binding``."""
    so = demo.output(demo.claim("claim-1", "observation", text, binding))
    inp = verifier_input(so, invocations())
    assert inp.gatekeeper_result.status == "pass", inp.gatekeeper_result.errors
    outcome = verify(inp, rules=RULES, phrases=PHRASES)
    [claim] = outcome.claim_checks
    return outcome.verdict, claim.status
