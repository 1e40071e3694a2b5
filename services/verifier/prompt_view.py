"""The model verifier's view of a round: what its prompt shows, by prompt variable.

The ``default`` prompt gets the contract's verifier input, compacted (short
invocation ids, no nulls, no rule catalogue, an excerpt equal to its claim's text
written once), and the code's check per claim. The ``small`` prompt gets each
claim with its excerpts and the code's status only. The Kafka event and
``tracebound verifier check`` keep the whole input; this is a view of it.
"""

from __future__ import annotations

from typing import Any

from services.verifier.claims import SUPPORTED
from services.verifier.input import VerifierInput
from services.verifier.judge import VerifierOutcome

# An excerpt that is its claim's text word for word is shown as this, not twice.
SAME_AS_CLAIM = "=claim_text"


def _model_input(inp: VerifierInput) -> dict[str, Any]:
    """The contract's verifier input as the model is shown it: what judges a claim.

    Left out: the question (it has its own fenced block), the final answer (never a
    source of facts here), the rule catalogue and version, nulls and empty lists,
    ``success`` where it is true, and the parse detail of a valid output. Invocation
    ids are short indexes (1, 2, 3 in trace order), in the claims and the trace
    alike: a 48-bit id costs several tokens.
    """
    short = {t.source_invocation_id: i for i, t in enumerate(inp.tool_trace_summary, start=1)}
    gate = inp.gatekeeper_result.model_dump(mode="json", exclude_none=True)
    for noise in ("rules", "rule_set_version"):  # long, and no help in judging a claim
        gate.pop(noise, None)
    bindings = gate.get("checked_bindings") or []
    # A passed binding says only "pass": the count stands for them. The claim's own
    # excerpts carry the verified text, so no binding repeats it.
    gate["checked_bindings"] = [
        {k: v for k, v in b.items() if k != "matched_text"}
        for b in bindings
        if b.get("status") != "pass"
    ]
    gate["bindings_passed"] = len(bindings) - len(gate["checked_bindings"])
    gate = _without_empty(gate)
    trace = []
    for t in inp.tool_trace_summary:
        entry = t.model_dump(mode="json", exclude_none=True, exclude={"backend", "input_summary"})
        entry["source_invocation_id"] = short[t.source_invocation_id]
        if entry.get("success") is True:
            del entry["success"]
        trace.append(_without_empty(entry))
    view = {
        "executor_structured_output": _shown_output(inp.executor_structured_output, short),
        "executor_output_parse_status": _parse_status(inp),
        "tool_trace_summary": trace,
        "gatekeeper_result": gate,
        "retry_context": inp.retry_context.model_dump(mode="json") if inp.retry_context else None,
    }
    return _without_empty(view)


def _parse_status(inp: VerifierInput) -> dict[str, Any]:
    """The parse status; its detail only when the output was not simply valid."""
    status = inp.executor_output_parse_status.model_dump(mode="json", exclude_none=True)
    if status.get("status") == "valid":
        status.pop("detail", None)
    return status


def _without_empty(value: dict[str, Any]) -> dict[str, Any]:
    """``value`` without its null or empty fields (one level)."""
    return {k: v for k, v in value.items() if v not in (None, [], {}, "")}


def _shown_output(output: dict[str, Any] | None, short: dict[int, int]) -> dict[str, Any] | None:
    """The structured output as the model is shown it.

    Each cited invocation id is its short index (an id that is in no trace entry
    stays as written), an excerpt word for word its claim's text is
    :data:`SAME_AS_CLAIM`, and the answer version (checked in code) is left out.
    """
    if not isinstance(output, dict) or not isinstance(output.get("claims"), list):
        return output

    def binding(b: Any, text: object) -> Any:
        if not isinstance(b, dict):
            return b
        shown = dict(b)
        if "evidence_excerpt" in b:
            shown["evidence_excerpt"] = _excerpt(b["evidence_excerpt"], text)
        cited = b.get("source_invocation_id")
        if type(cited) is int and cited in short:
            shown["source_invocation_id"] = short[cited]
        return shown

    def claim(c: Any) -> Any:
        bindings = c.get("evidence_bindings") if isinstance(c, dict) else None
        if not isinstance(bindings, list):
            return c
        text = c.get("claim_text")
        return {**c, "evidence_bindings": [binding(b, text) for b in bindings]}

    shown = {k: v for k, v in output.items() if k != "answer_version"}
    return _without_empty({**shown, "claims": [claim(c) for c in output["claims"]]})


def _excerpt(excerpt: object, claim_text: object) -> object:
    """``excerpt``, or :data:`SAME_AS_CLAIM` when it is the claim's text word for word."""
    return SAME_AS_CLAIM if excerpt and excerpt == claim_text else excerpt


def _checks(outcome: VerifierOutcome) -> list[dict[str, Any]]:
    """The deterministic verdict per claim, with the facts it did not find.

    The excerpts are not repeated here: the structured output carries them. A
    SUPPORTED claim with every fact found needs no reason.
    """
    checks = []
    for check in outcome.claim_checks:
        facts = _facts(outcome, check.claim_id)
        shown: dict[str, Any] = {"claim_id": check.claim_id, "status": check.status}
        if check.status != SUPPORTED or facts["not_found"]:
            shown["reason"] = check.reason
        checks.append(_without_empty({**shown, **facts}))
    return checks


def _facts(outcome: VerifierOutcome, claim_id: str) -> dict[str, Any]:
    facts = [f for f in outcome.facts_checked if f.claim_id == claim_id]
    return {
        "facts_found": sum(f.found for f in facts),
        "not_found": [f"{f.kind}: {f.fact}" for f in facts if not f.found],
    }


def _compact_claims(inp: VerifierInput, outcome: VerifierOutcome) -> list[dict[str, Any]]:
    """Each claim with its cited excerpts and the code's check: the ``small`` profile's view."""
    output = inp.executor_structured_output or {}
    excerpts = {
        str(c.get("claim_id")): [
            str(_excerpt(b.get("evidence_excerpt", ""), c.get("claim_text")))
            for b in c.get("evidence_bindings") or ()
            if isinstance(b, dict)
        ]
        for c in output.get("claims") or ()
        if isinstance(c, dict)
    }
    return [
        {
            "claim_id": check.claim_id,
            "claim_type": check.claim_type,
            "claim_text": check.claim_text,
            "excerpts": excerpts.get(check.claim_id, []),
            "code": check.status,
            "not_found": _facts(outcome, check.claim_id)["not_found"],
        }
        for check in outcome.claim_checks
    ]


def _gatekeeper_line(inp: VerifierInput) -> str:
    gate = inp.gatekeeper_result
    failed = ", ".join(gate.failed_rules) if gate.failed_rules else "none"
    return f"status {gate.status}, severity {gate.severity}, failed rules: {failed}"


def view(inp: VerifierInput, outcome: VerifierOutcome, *, compact: bool) -> dict[str, Any]:
    """What the model is shown, by the name of the prompt variable each part fills:
    the compact view of the ``small`` prompt, or the contract input and the code's checks."""
    if compact:
        return {"claims": _compact_claims(inp, outcome), "gatekeeper": _gatekeeper_line(inp)}
    return {"verifier_input": _model_input(inp), "deterministic_checks": _checks(outcome)}
