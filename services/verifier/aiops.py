"""The AIOps rule evaluation (docs/contracts.md): a diagnosis started by alerts stays on them.

Why separate from the verdict: it audits the shape of an alert-driven
diagnosis (was there a report, did it look at the input alerts, did it use the
evidence tools, did it promote some other firing alert to the main subject)
rather than whether each claim is true, and is stored beside the verdict in
``self_evaluation.aiops_rule_evaluation``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from services.verifier.facts import extract
from services.verifier.rules_file import VerifierRules
from tracebound.events import Alert, ToolTraceEntry


def _targets(alerts: Sequence[Alert], labels: Sequence[str]) -> list[str]:
    """The input alerts' names and subjects (label values), casefolded, in order."""
    targets: list[str] = []
    for alert in alerts:
        for label in labels:
            value = alert.labels.get(label)
            if value is not None and value.strip() and value.casefold() not in targets:
                targets.append(value.strip().casefold())
    return targets


def _claims(structured_output: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    claims = structured_output.get("claims") if structured_output else None
    out = []
    for index, claim in enumerate(claims if isinstance(claims, list) else []):
        if isinstance(claim, Mapping) and isinstance(claim.get("claim_text"), str):
            raw_id = claim.get("claim_id")
            out.append(
                (raw_id if isinstance(raw_id, str) else f"claims[{index}]", claim["claim_text"])
            )
    return out


def _related(subject: str, targets: Sequence[str]) -> bool:
    """A subject is an input target, or one contains the other (a pod of the service)."""
    return any(subject == t or t in subject or subject in t for t in targets)


def evaluate_aiops(
    alerts: Sequence[Alert],
    structured_output: Mapping[str, Any] | None,
    tool_trace_summary: Sequence[ToolTraceEntry],
    answer_exists: bool,
    rules: VerifierRules,
) -> dict[str, Any]:
    """``{"version", "checks": [{"id", "passed", "detail"}], "passed"}`` for one round."""
    spec = rules.doc.aiops
    targets = _targets(alerts, spec.target_labels)
    claims = _claims(structured_output)
    checks: list[dict[str, Any]] = []

    detail = "a report was produced" if answer_exists else "no report was produced"
    checks.append({"id": "report.exists", "passed": answer_exists, "detail": detail})

    focused = [cid for cid, text in claims if any(t in text.casefold() for t in targets)]
    if not targets:
        passed, detail = False, "the request carries no alert labels to focus on"
    elif focused:
        passed, detail = True, f"claims about the input alerts: {', '.join(focused)}"
    else:
        passed, detail = False, f"no claim mentions the input alerts ({', '.join(targets)})"
    checks.append({"id": "focus.input_alerts", "passed": passed, "detail": detail})

    used = []
    for entry in tool_trace_summary:
        tool = entry.tool_name
        if tool in spec.evidence_tools and tool not in used:
            used.append(tool)
    detail = f"evidence tools used: {', '.join(used)}" if used else "no evidence tool was called"
    checks.append({"id": "evidence.tools_used", "passed": bool(used), "detail": detail})

    promoted = []
    for cid, text in claims:
        subjects = [
            i.norm for i in extract(text, rules).identifiers if i.kind in spec.subject_kinds
        ]
        if subjects and not any(_related(s, targets) for s in subjects):
            promoted.append(f"{cid} ({', '.join(subjects)})")
    detail = (
        f"claims about alerts or services outside the input: {'; '.join(promoted)}"
        if promoted
        else "no claim is mainly about an alert or service outside the input"
    )
    checks.append({"id": "focus.no_unrelated_alerts", "passed": not promoted, "detail": detail})

    return {
        "version": spec.version,
        "checks": checks,
        "passed": all(check["passed"] for check in checks),
    }
