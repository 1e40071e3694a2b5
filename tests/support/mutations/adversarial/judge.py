"""One claim through the real gatekeeper and verifier: the verdict an edit reaches.

Why through both: the edits change only the claim text, never the excerpts or
bindings, so the gatekeeper passes every edited claim and only the verifier
stands between it and PASS. A shape the gatekeeper rejects is a broken shape,
not a catch, so that is an error here.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from services.gatekeeper import Ruleset, check, default_ruleset
from services.verifier import VerifierInput, verify
from tests.support.gate import records
from tests.support.mutations.adversarial.shapes import Shape, invocations
from tests.support.rulebook import PHRASES, RULES
from tracebound.events import ComposerInput, ToolInvocation


@dataclass(frozen=True)
class Verdict:
    """The round's verdict, the claim's status and reason, and what the composer may state."""

    verdict: str
    status: str
    reason: str
    material: ComposerInput

    @property
    def passed(self) -> bool:
        return self.verdict == "PASS" and self.status == "SUPPORTED"


@cache
def _ruleset() -> Ruleset:
    return default_ruleset()


@cache
def _invocations(kind: str) -> tuple[ToolInvocation, ...]:
    """Parsed once per set: the records are immutable and parsing them dominates a check."""
    return records(invocations(kind))


def judge(shape: Shape, text: str | None = None) -> Verdict:
    """The verdict on ``shape`` with its claim text set to ``text`` (default: the true text)."""
    return judge_output(shape.output(text), shape.invocations, shape.name)


def judge_output(so: dict[str, Any], kind: str, name: str) -> Verdict:
    """The verdict on a whole executor output citing the ``kind`` invocation set."""
    checked = check(so, _invocations(kind), _ruleset())
    if checked.result.severity != "none":
        raise AssertionError(f"{name}: gatekeeper {checked.result.errors}")
    outcome = verify(
        VerifierInput.model_validate(
            {
                "original_query": "adversarial",
                "executor_structured_output": checked.structured_output,
                "executor_output_parse_status": {"status": "valid", "detail": ""},
                "gatekeeper_result": checked.result,
            }
        ),
        rules=RULES,
        phrases=PHRASES,
    )
    claim = outcome.claim_checks[0]
    return Verdict(outcome.verdict, claim.status, claim.reason, outcome.composer_input)
