"""The deterministic (``rules``) verifier: claim checks, verdict and the composer's material.

Why this order of verdict rules: the gatekeeper's word comes first (a rejected
citation can never be outweighed by well-phrased claims, a low-confidence one
never reaches PASS), then an unusable executor output, then the claims
themselves (one refuted claim rejects the round, one unproven claim lowers
it). Only claims judged SUPPORTED reach the composer, and nothing at all does
when the verdict is REJECT. ``executor_final_answer`` is never read: it is
debug text, and a valid structured output must not be second-guessed by it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from services.verifier.aiops import evaluate_aiops
from services.verifier.claims import (
    NOT_ENOUGH_INFO,
    REFUTED,
    SUPPORTED,
    BindingIndex,
    Judgement,
    judge_claim,
)
from services.verifier.input import VerifierInput
from services.verifier.material import evidence_actions, texts
from services.verifier.rules_file import OverclaimPhrases, VerifierRules
from tracebound.events import AllowedClaim, ClaimCheck, ComposerInput, FactCheck

PASS, LOW_CONFID, REJECT = "PASS", "LOW_CONFID", "REJECT"


@dataclass(frozen=True, slots=True)
class VerifierOutcome:
    """The verifier output (docs/contracts.md) plus the composer's material and a retry."""

    verdict: str
    groundedness_score: float
    critical_fact_count: int
    claim_checks: tuple[ClaimCheck, ...]
    facts_checked: tuple[FactCheck, ...]
    rationale: str
    composer_input: ComposerInput
    retry_reasons: tuple[str, ...]
    failed_claims: tuple[str, ...]
    missing_info: tuple[str, ...]
    rejected_claims: tuple[str, ...]
    round: int
    rule_set_version: str
    aiops_rule_evaluation: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        """The CLI/JSON form: the contract's fields first, then the extensions."""
        return {
            "verdict": self.verdict,
            "groundedness_score": self.groundedness_score,
            "critical_fact_count": self.critical_fact_count,
            "claim_checks": [c.model_dump(mode="json") for c in self.claim_checks],
            "facts_checked": [f.model_dump(mode="json") for f in self.facts_checked],
            "rationale": self.rationale,
            "round": self.round,
            "verifier_mode": "rules",
            "fallback": None,  # why the model verifier fell back, in llm mode
            "rule_set_version": self.rule_set_version,
            "retry": {
                "reasons": list(self.retry_reasons),
                "failed_claims": list(self.failed_claims),
                "missing_info": list(self.missing_info),
            },
            "composer_input": self.composer_input.model_dump(mode="json"),
            "aiops_rule_evaluation": self.aiops_rule_evaluation,
        }


def _judgements(
    so: Mapping[str, Any], inp: VerifierInput, rules: VerifierRules, phrases: OverclaimPhrases
) -> list[Judgement]:
    claims = so.get("claims")
    index = BindingIndex(inp.gatekeeper_result.checked_bindings)
    out = []
    for position, claim in enumerate(claims if isinstance(claims, list) else []):
        if isinstance(claim, Mapping):
            out.append(judge_claim(claim, position, index, rules, phrases))
        else:
            check = ClaimCheck(
                claim_id=f"claims[{position}]",
                claim_type="",
                claim_text="",
                status=NOT_ENOUGH_INFO,
                reason="claim is not an object",
            )
            out.append(Judgement(check, (), ()))
    return out


def _verdict(inp: VerifierInput, usable: bool, statuses: list[str]) -> tuple[str, str]:  # noqa: PLR0911  # the verdict rules in order of precedence, one return each
    """The verdict and the one rule that decided it."""
    gate = inp.gatekeeper_result
    if gate.severity == "reject":
        failed = ", ".join(gate.failed_rules) or "unspecified rules"
        return REJECT, f"gatekeeper rejected the citations ({failed})"
    if not usable:
        status = inp.executor_output_parse_status
        return LOW_CONFID, f"executor structured output is unusable ({status.status})"
    if REFUTED in statuses:
        return REJECT, "a claim is contradicted by its cited evidence"
    if gate.severity == "low_confid" or gate.status != "pass":
        failed = ", ".join(gate.failed_rules) or "unspecified rules"
        return LOW_CONFID, f"gatekeeper lowered confidence ({failed})"
    if not statuses:
        return LOW_CONFID, "the executor made no claim"
    if NOT_ENOUGH_INFO in statuses:
        return LOW_CONFID, "some claims are not established by their cited evidence"
    return PASS, "every claim is established by gatekeeper-verified evidence"


def _gaps(judgements: list[Judgement]) -> list[str]:
    """Fact-free notes on what could not be established, safe to show to a user."""
    notes = []
    for j in judgements:
        if j.check.status == SUPPORTED:
            continue
        kinds = sorted({f.kind for f in j.facts if not f.found})
        what = ", ".join(kinds) if kinds else "its content"
        verb = "contradicts" if j.check.status == REFUTED else "does not establish"
        notes.append(f"the cited evidence {verb} claim {j.check.claim_id} ({what})")
    return notes


def verify(
    inp: VerifierInput,
    rules: VerifierRules,
    phrases: OverclaimPhrases,
) -> VerifierOutcome:
    """Judge one round of executor evidence; pure and deterministic."""
    so = inp.executor_structured_output
    usable = inp.executor_output_parse_status.usable and isinstance(so, dict)
    judgements = _judgements(so, inp, rules, phrases) if usable and so is not None else []
    statuses = [j.check.status for j in judgements]
    verdict, decided_by = _verdict(inp, usable, statuses)
    supported = [j for j in judgements if j.check.status == SUPPORTED]
    score = round(len(supported) / len(judgements), 6) if judgements else 0.0
    facts = tuple(f for j in judgements for f in j.facts)

    gate = inp.gatekeeper_result
    counts = {s: statuses.count(s) for s in (SUPPORTED, REFUTED, NOT_ENOUGH_INFO)}
    rationale = (
        f"{verdict}: {decided_by}. Gatekeeper {gate.status}/{gate.severity} "
        f"({gate.rule_set_version}); {rules.version}: {counts[SUPPORTED]} supported, "
        f"{counts[REFUTED]} refuted, {counts[NOT_ENOUGH_INFO]} not enough info "
        f"of {len(judgements)} claims; {len(facts)} facts checked."
    )

    declared_missing = texts(so.get("missing_info")) if usable and so is not None else []
    missing = tuple(dict.fromkeys([*declared_missing, *_gaps(judgements)]))
    if not usable:
        missing = (*missing, "a parsable executor_evidence_v2 output")
    allowed = (
        ()
        if verdict == REJECT
        else tuple(
            AllowedClaim(
                claim_id=j.check.claim_id,
                claim_type=j.check.claim_type,
                claim_text=j.check.claim_text,
                evidence_excerpts=j.excerpts,
                raw_paths=j.check.raw_paths,
            )
            for j in supported
        )
    )
    hypotheses = texts(so.get("hypotheses")) if usable and so is not None else []
    actions = evidence_actions(so.get("recommended_actions"), rules) if usable and so else []
    material = ComposerInput(
        original_query=inp.original_query,
        verdict=verdict,
        allowed_claims=allowed,
        allowed_hypotheses=() if verdict == REJECT else tuple(hypotheses),
        missing_info=missing,
        recommended_actions=tuple(actions),
        rationale=rationale,
        evidence_backends=tuple(
            dict.fromkeys(e.backend.name for e in inp.tool_trace_summary if e.backend)
        ),
    )

    failed = tuple(j.check.claim_id for j in judgements if j.check.status != SUPPORTED)
    reasons: tuple[str, ...] = () if verdict == PASS else (decided_by, *_gaps(judgements))
    aiops = None
    if inp.mode == "AIOPS":
        trace = inp.tool_trace_summary
        aiops = evaluate_aiops(inp.alerts, so if usable else None, trace, usable, rules)
    return VerifierOutcome(
        verdict=verdict,
        groundedness_score=score,
        critical_fact_count=len(facts),
        claim_checks=tuple(j.check for j in judgements),
        facts_checked=facts,
        rationale=rationale,
        composer_input=material,
        retry_reasons=tuple(dict.fromkeys(reasons)),
        failed_claims=failed,
        missing_info=missing,
        rejected_claims=tuple(j.check.claim_text for j in judgements if j.check.status == REFUTED),
        round=inp.round,
        rule_set_version=rules.version,
        aiops_rule_evaluation=aiops,
    )
