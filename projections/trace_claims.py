"""The claims of a trace: each binding next to the ref its invocation recorded.

For every claim of the executor's structured output this lines up what the
executor cited (``source_invocation_id`` + ``raw_path`` + ``evidence_excerpt``),
what the cited invocation recorded for that path, how the gatekeeper judged the
binding (and whether it back-filled it), and how the verifier judged the claim.
The inputs are ``jsonb`` values that may be malformed, so every read tolerates
any shape.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from projections.row_values import as_dict, as_list, jsonable
from projections.stored_state import slot_value

Row = Mapping[str, Any]
Key = tuple[Any, Any]
# Gatekeeper outcomes of one binding, worst first: a claim shows its worst binding.
GATE_RANK = {"fail": 3, "backfilled": 2, "skipped": 1, "pass": 0}
NOTE_KEYS = ("rule", "severity", "message", "source_invocation_id", "raw_path", "hint")


def note(raw: Mapping[str, Any]) -> dict[str, Any]:
    """A gatekeeper warning or error with its absent details left out."""
    return {k: raw[k] for k in NOTE_KEYS if raw.get(k) is not None}


def gate_notes(gate: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The gatekeeper's warnings (back-fills among them) as dicts."""
    return [as_dict(n) for n in as_list(gate.get("warnings"))]


def _recorded_refs(invocations: Sequence[Row]) -> dict[tuple[int, str], str]:
    refs: dict[tuple[int, str], str] = {}
    for inv in invocations:
        details = as_dict(inv.get("retrieval_details"))
        for ref in map(as_dict, as_list(details.get("evidence_refs"))):
            if isinstance(ref.get("raw_path"), str):
                refs[(int(inv["id"]), ref["raw_path"])] = str(ref.get("text", ""))
    return refs


def _by_binding(notes: Any) -> dict[Key, list[dict[str, Any]]]:
    grouped: dict[Key, list[dict[str, Any]]] = {}
    for raw in map(as_dict, as_list(notes)):
        grouped.setdefault((raw.get("claim_id"), raw.get("binding_index")), []).append(raw)
    return grouped


def _executor_original(run: Row) -> dict[str, Any]:
    """The executor's own structured output (before any gatekeeper back-fill), if kept.

    The run row carries the gatekeeper's copy, into which back-filled ids and paths
    are written; the merge state still holds the executor's evidence event, which
    shows what the executor itself cited.
    """
    evidence = slot_value(as_dict(run.get("merge_state")), "evidence", run)
    return as_dict(evidence.get("executor_structured_output"))


@dataclass(frozen=True, slots=True)
class _Outcomes:
    """What the gatekeeper and the tool invocations say, keyed for lookup per binding."""

    checked: Mapping[Key, Mapping[str, Any]]
    warnings: Mapping[Key, list[dict[str, Any]]]
    errors: Mapping[Key, list[dict[str, Any]]]
    refs: Mapping[tuple[int, str], str]
    invocation_ids: set[int]

    def ref_status(self, sid: Any, path: Any) -> tuple[str, str | None]:
        """Whether the invocation ``sid`` recorded a ref at ``path``, and its text."""
        if type(sid) is not int or not isinstance(path, str):
            return "unbound", None
        if sid not in self.invocation_ids:
            return "no_invocation", None
        if (sid, path) not in self.refs:
            return "no_ref", None
        return "found", self.refs[(sid, path)]


def _binding(
    outcomes: _Outcomes, claim_id: str, index: int, binding: Any, original: Any
) -> dict[str, Any]:
    fields = as_dict(binding)
    check = as_dict(outcomes.checked.get((claim_id, index)))
    sid = fields.get("source_invocation_id")
    path = fields.get("raw_path")
    if sid is None and isinstance(check.get("source_invocation_id"), int):
        sid = check["source_invocation_id"]
    if path is None and isinstance(check.get("raw_path"), str):
        path = check["raw_path"]
    ref_status, recorded = outcomes.ref_status(sid, path)
    out: dict[str, Any] = {
        "binding_index": index,
        "tool_name": fields.get("tool_name"),
        "source_invocation_id": sid,
        "raw_path": path,
        "evidence_excerpt": fields.get("evidence_excerpt"),
        "recorded_ref_text": recorded,
        "recorded_ref_status": ref_status,
        "gatekeeper": {
            "status": check.get("status", "unchecked") if check else "unchecked",
            "rule": check.get("rule"),
            "reason": check.get("reason"),
            "matched_text": check.get("matched_text"),
            "warnings": [note(n) for n in outcomes.warnings.get((claim_id, index), [])],
            "errors": [note(n) for n in outcomes.errors.get((claim_id, index), [])],
        },
    }
    if not isinstance(binding, Mapping):
        out["malformed"] = jsonable(binding)
    said = as_dict(original)
    if said and (
        said.get("source_invocation_id") != sid or said.get("raw_path") != path
    ):  # the gatekeeper back-filled (or rewrote) what the executor cited
        out["executor_cited"] = {
            "source_invocation_id": said.get("source_invocation_id"),
            "raw_path": said.get("raw_path"),
        }
    return out


def claims(run: Row, evaluation: Mapping[str, Any], invocations: Sequence[Row]) -> list[Any]:
    """Every claim of the structured output, then any the verifier judged that it lacks."""
    output = as_dict(evaluation.get("executor_structured_output"))
    gate = as_dict(evaluation.get("gatekeeper_result"))
    errors = _by_binding(gate.get("errors"))
    outcomes = _Outcomes(
        checked={
            (c.get("claim_id"), c.get("binding_index", 0)): c
            for c in map(as_dict, as_list(gate.get("checked_bindings")))
        },
        warnings=_by_binding(gate.get("warnings")),
        errors=errors,
        refs=_recorded_refs(invocations),
        invocation_ids={int(inv["id"]) for inv in invocations},
    )
    checks = {c.get("claim_id"): c for c in map(as_dict, as_list(evaluation.get("claim_checks")))}
    facts: dict[Any, list[dict[str, Any]]] = {}
    for fact in map(as_dict, as_list(evaluation.get("facts_checked"))):
        stated, conflict = bool(fact.get("found")), bool(fact.get("conflict"))
        facts.setdefault(fact.get("claim_id"), []).append(
            {
                "kind": fact.get("kind"),
                "fact": fact.get("fact"),
                "found": stated,
                "outcome": "checked" if stated else "contradicted" if conflict else "not stated",
                "detail": fact.get("detail") or "",
            }
        )
    original_claims = as_list(_executor_original(run).get("claims"))
    found: list[dict[str, Any]] = []
    for c_index, raw in enumerate(as_list(output.get("claims"))):
        claim = as_dict(raw)
        claim_id = str(claim.get("claim_id") or f"#{c_index}")
        said = as_dict(original_claims[c_index]) if c_index < len(original_claims) else {}
        said_bindings = as_list(said.get("evidence_bindings"))
        bindings = [
            _binding(
                outcomes,
                claim_id,
                b_index,
                b,
                said_bindings[b_index] if b_index < len(said_bindings) else None,
            )
            for b_index, b in enumerate(as_list(claim.get("evidence_bindings")))
        ]
        found.append(_claim(claim_id, claim, bindings, checks=checks, facts=facts, errors=errors))
    listed = {c["claim_id"] for c in found}
    for judged, check in checks.items():  # judged but absent from the structured output
        if judged not in listed:
            found.append(_claim(str(judged), check, [], checks=checks, facts=facts, errors=errors))
    return found


def _claim(
    claim_id: str,
    claim: Mapping[str, Any],
    bindings: list[dict[str, Any]],
    *,
    checks: Mapping[Any, Mapping[str, Any]],
    facts: Mapping[Any, list[dict[str, Any]]],
    errors: Mapping[Key, list[dict[str, Any]]],
) -> dict[str, Any]:
    check = checks.get(claim_id)
    worst = max(
        (b["gatekeeper"]["status"] for b in bindings),
        key=lambda s: GATE_RANK.get(s, -1),
        default="unchecked",
    )
    claim_errors = [note(n) for n in errors.get((claim_id, None), [])]
    if claim_errors:
        worst = "fail"
    return {
        "claim_id": claim_id,
        "claim_type": claim.get("claim_type"),
        "claim_text": claim.get("claim_text"),
        "support_level": claim.get("support_level"),
        "bindings": bindings,
        "gatekeeper": {"status": worst, "errors": claim_errors},
        "verifier": None
        if check is None
        else {
            "status": check.get("status"),
            "reason": check.get("reason"),
            "raw_paths": as_list(check.get("raw_paths")),
            "facts": facts.get(claim_id, []),
        },
    }
