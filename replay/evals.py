"""Eval suites: cases with expected behaviour, run through the in-process chain and scored.

A case is one JSON file (``evals/demo/*.json``)::

    {"id": "...", "request": {"mode": "CHAT", "query": "...", "language": "en", "alerts": [...]},
     "expect": {"verdict": "PASS" | ["PASS", "LOW_CONFID"], "claim_types": [...],
                "min_claims": 1, "max_claims": 2, "must_contain": [...],
                "must_not_contain": [...], "required_tools": [...], "citations_valid": true},
     "faults": {"failing_tools": ["query_logs"]}}

Why these expectations: they are what the pipeline promises a user — the verdict,
that the final claims are of the allowed kinds (a narrow question gets one or two
observations), what the answer must and must not say (no over-claims), which
evidence was actually consulted, and that every citation survived the
gatekeeper. Each expectation is scored separately, so a failing case says
exactly which promise broke. Text checks are case-insensitive.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from replay.chain import Chain, ChainResult
from replay.frozen import FrozenTools, with_faults
from replay.recorded import Progress, quiet
from replay.report import CaseResult, Report
from services.executor.tools.base import EvidenceTool
from tracebound import resources
from tracebound.errors import InvalidInputError
from tracebound.events import (
    Alert,
    DiagnosisRequest,
    DiagnosisRequested,
    GatekeeperOutcome,
    Producer,
)
from tracebound.events.base import utcnow

Verdict = Literal["PASS", "LOW_CONFID", "REJECT"]
EVALS_DIR = resources.path("evals")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CaseRequest(_Strict):
    mode: Literal["CHAT", "AIOPS"] = "CHAT"
    query: str = Field(min_length=1)
    language: str = "en"
    alerts: tuple[Alert, ...] = ()


class Expect(_Strict):
    verdict: Verdict | tuple[Verdict, ...] | None = None
    claim_types: tuple[str, ...] | None = None
    min_claims: int | None = Field(default=None, ge=0)
    max_claims: int | None = Field(default=None, ge=0)
    must_contain: tuple[str, ...] = ()
    must_not_contain: tuple[str, ...] = ()
    required_tools: tuple[str, ...] = ()
    citations_valid: bool | None = None


class Faults(_Strict):
    failing_tools: tuple[str, ...] = ()


class EvalCase(_Strict):
    id: str = Field(min_length=1)
    description: str = ""
    request: CaseRequest
    expect: Expect
    faults: Faults = Faults()

    def request_event(self) -> DiagnosisRequested:
        return DiagnosisRequested(
            run_id=f"eval-{self.id}-{uuid.uuid4().hex[:8]}",
            producer=Producer(service="eval"),
            request=DiagnosisRequest(
                mode=self.request.mode,
                query=self.request.query,
                language=self.request.language,
                alerts=self.request.alerts,
                requested_by="eval",
                requested_at=utcnow(),
            ),
        )


def load_suite(folder: Path) -> list[EvalCase]:
    """Every ``*.json`` case of ``folder``, by file name; ids must be unique."""
    files = sorted(folder.glob("*.json"))
    if not files:
        raise InvalidInputError(f"{folder}: no eval cases (*.json)")
    cases: list[EvalCase] = []
    for path in files:
        try:
            cases.append(EvalCase.model_validate(json.loads(path.read_text(encoding="utf-8"))))
        except (OSError, ValueError, ValidationError) as exc:
            raise InvalidInputError(f"{path}: not an eval case: {exc}") from None
    ids = [c.id for c in cases]
    if len(set(ids)) != len(ids):
        raise InvalidInputError(f"{folder}: two cases share an id")
    return cases


def _check(name: str, passed: bool, detail: str) -> dict[str, Any]:
    return {"check": name, "passed": passed, "detail": detail}


def final_claims(result: ChainResult) -> list[Mapping[str, Any]]:
    """The claims of the last round, after the gatekeeper (what the verifier judged)."""
    if not result.gatekeeper_results:
        return []
    output = result.gatekeeper_results[-1].executor_structured_output
    claims = output.get("claims") if isinstance(output, Mapping) else None
    return [c for c in claims or [] if isinstance(c, Mapping)]


def _last_gate(result: ChainResult) -> GatekeeperOutcome | None:
    gates = result.gatekeeper_results
    return gates[-1].gatekeeper_result if gates else None


def score(expect: Expect, result: ChainResult) -> list[dict[str, Any]]:
    """One reason per expectation, passed or not."""
    reasons: list[dict[str, Any]] = []
    answer = result.answer
    verdict = answer.verdict if answer else "none"
    text = answer.user_facing_answer if answer else ""
    folded = text.casefold()
    if expect.verdict is not None:
        allowed = (expect.verdict,) if isinstance(expect.verdict, str) else expect.verdict
        ok = verdict in allowed
        reasons.append(_check("verdict", ok, f"verdict {verdict} (expected {'/'.join(allowed)})"))
    claims = final_claims(result)
    types = [str(c.get("claim_type")) for c in claims]
    if expect.claim_types is not None:
        stray = sorted(set(types) - set(expect.claim_types))
        detail = f"claim types {types or '[]'}" + (f"; not allowed: {stray}" if stray else "")
        reasons.append(_check("claim_types", not stray, detail))
    if expect.min_claims is not None:
        ok = len(claims) >= expect.min_claims
        reasons.append(
            _check("min_claims", ok, f"{len(claims)} claim(s), at least {expect.min_claims}")
        )
    if expect.max_claims is not None:
        ok = len(claims) <= expect.max_claims
        reasons.append(
            _check("max_claims", ok, f"{len(claims)} claim(s), at most {expect.max_claims}")
        )
    for phrase in expect.must_contain:
        ok = phrase.casefold() in folded
        reasons.append(
            _check("must_contain", ok, f"answer {'contains' if ok else 'lacks'} {phrase!r}")
        )
    for phrase in expect.must_not_contain:
        ok = phrase.casefold() not in folded
        said = "does not say" if ok else "says"
        reasons.append(_check("must_not_contain", ok, f"answer {said} {phrase!r}"))
    called = {inv.tool_name for inv in result.invocations}
    for tool in expect.required_tools:
        ok = tool in called
        state = "called" if ok else "never called"
        reasons.append(_check("required_tools", ok, f"{tool} {state}"))
    if expect.citations_valid is not None:
        last = (
            result.gatekeeper_results[-1].gatekeeper_result if result.gatekeeper_results else None
        )
        valid = last is not None and last.status == "pass"
        detail = f"gatekeeper {last.status}/{last.severity}" if last else "no gatekeeper result"
        if last is not None and last.failed_rules:
            detail += f" ({', '.join(last.failed_rules)})"
        reasons.append(_check("citations_valid", valid == expect.citations_valid, detail))
    return reasons


def run_summary(result: ChainResult) -> dict[str, Any]:
    """What the case's run did, stored with the case row for later reading."""
    answer = result.answer
    last = _last_gate(result)
    return {
        "run_id": result.run_id,
        "verdict": answer.verdict if answer else None,
        "final_status": answer.final_status if answer else None,
        "rounds": result.rounds,
        "claim_types": [str(c.get("claim_type")) for c in final_claims(result)],
        "tools": [
            {"tool": i.tool_name, "success": i.success, "round": i.round}
            for i in result.invocations
        ],
        "gatekeeper": {"status": last.status, "severity": last.severity} if last else None,
        "groundedness": result.verdict.groundedness_score if result.verdict else None,
        "guard_violations": list(answer.guard.violations) if answer else [],
        "answer": answer.user_facing_answer if answer else None,
    }


def run_case(chain: Chain, case: EvalCase, tools: Mapping[str, EvidenceTool]) -> CaseResult:
    """One case through the chain with its faults applied to ``tools``."""
    case_chain = chain.with_tools(with_faults(tools, case.faults.failing_tools))
    try:
        result = case_chain.run(case.request_event())
    except Exception as exc:  # a crashing case is a failed case with its reason, not a crash
        reason = _check("run", False, f"the pipeline failed: {type(exc).__name__}: {exc}")
        return CaseResult(case.id, False, [reason], {"error": str(exc)})
    reasons = score(case.expect, result)
    return CaseResult(case.id, all(r["passed"] for r in reasons), reasons, run_summary(result))


def run_suite(
    cases: Sequence[EvalCase],
    chain: Chain,
    tools: Mapping[str, EvidenceTool],
    *,
    suite: str,
    candidate: dict[str, Any],
    frozen: FrozenTools | None = None,
    progress: Progress = quiet,
) -> Report:
    """Every case, in order; the report lists each with pass/fail and its reasons."""
    results = []
    for index, case in enumerate(cases, start=1):
        progress(f"eval: case {index}/{len(cases)} {case.id}")
        results.append(run_case(chain, case, tools))
    passed = sum(1 for r in results if r.passed)
    summary: dict[str, Any] = {
        "cases": len(results),
        "passed": passed,
        "failed": len(results) - passed,
        "failed_cases": [r.case_id for r in results if not r.passed],
    }
    if frozen is not None:
        summary["unrecorded_tool_calls"] = len(frozen.misses)
    return Report(
        kind="eval",
        baseline={"suite": suite},
        candidate=candidate,
        summary=summary,
        per_run=[{"case_id": r.case_id, "passed": r.passed, **r.run} for r in results],
        cases=results,
    )
