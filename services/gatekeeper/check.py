"""The gatekeeper check: are the executor's citations real?

A pure function of (executor_structured_output, tool_invocations, rule set):
no model, no I/O, no clock, so the same input always gives the same
``gatekeeper_result`` and the Verifier can trust that every excerpt it reads
was found verbatim in a tool output of this session.

The checks per binding are :class:`~services.gatekeeper.run.CheckRun`'s.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from services.gatekeeper.input import Invocation, index, index_invocations
from services.gatekeeper.result import CheckOutcome, with_fills
from services.gatekeeper.rule_ids import RuleId
from services.gatekeeper.ruleset import (
    SEVERITY_BY_RANK,
    Ruleset,
)
from services.gatekeeper.run import CheckRun
from tracebound.events import GatekeeperOutcome, GateNote, ToolInvocation


@dataclass(frozen=True, slots=True)
class Judgement:
    """What a check decided, without the records that explain it (for a replay)."""

    status: str
    severity: str
    failed_rules: tuple[str, ...]


def _judged(
    structured_output: Any,
    invocations: dict[int, Invocation],
    duplicates: int,
    ruleset: Ruleset,
) -> tuple[CheckRun, Judgement]:
    run = CheckRun(ruleset, invocations)
    if duplicates:
        message = f"{duplicates} duplicate invocation ids; the first record of each is used"
        run.warnings.append(GateNote(rule=RuleId.INVOCATION_EXISTS, message=message))
    run.output(structured_output)
    failed = tuple(rule for rule in ruleset.order if rule in run.failed) if run.failed else ()
    status = "pass" if run.rank == 0 else "fail"
    return run, Judgement(status, SEVERITY_BY_RANK[run.rank], failed)


def judge(
    structured_output: Any,
    invocations: Iterable[Invocation],
    ruleset: Ruleset,
) -> Judgement:
    """The status, severity and failed rules :func:`check` gives the same input.

    A replay compares only these, so it skips building the result's records.
    """
    by_id, duplicates = index(invocations)
    return _judged(structured_output, by_id, duplicates, ruleset)[1]


def check(
    structured_output: Mapping[str, Any] | None,
    tool_invocations: Sequence[ToolInvocation],
    ruleset: Ruleset,
) -> CheckOutcome:
    """Verify every citation of ``structured_output`` against the recorded invocations."""
    invocations, duplicates = index_invocations(tool_invocations)
    run, judgement = _judged(structured_output, invocations, duplicates, ruleset)
    result = GatekeeperOutcome(
        status=judgement.status,
        severity=judgement.severity,
        rule_set_version=ruleset.version,
        rules=run.plan.rules,
        checked_bindings=tuple(rec.record() for rec in run.bindings),
        failed_rules=judgement.failed_rules,
        warnings=tuple(run.warnings),
        errors=tuple(run.errors),
    )
    return CheckOutcome(result, with_fills(structured_output, run.fills))
