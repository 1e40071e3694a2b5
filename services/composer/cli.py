"""``tracebound composer guard FILE``.

Why a CLI: operators and evaluations check any answer text (a model's, an
edited one, a stored one) against the claims it was allowed to state, without
Kafka. One ``{"ok", "violations"}`` JSON line is printed per input object, in
input order; exit 0 whenever the guard ran (violations are a result), exit 2
on invalid input. All input is validated before anything is printed.
"""

from __future__ import annotations

import argparse

from pydantic import BaseModel, ConfigDict, Field

from services.composer.guard import guard
from tracebound.events import AllowedClaim
from tracebound.jsonio import add_check_command, parse_each, print_json_line, read_text


class AllowedClaimIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    claim_id: str | None = None
    claim_type: str = "observation"
    claim_text: str
    evidence_excerpts: list[str] = Field(default_factory=list)
    raw_paths: list[str] = Field(default_factory=list)


class GuardInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    allowed_claims: list[str | AllowedClaimIn]
    answer: str
    rejected_claims: list[str] = Field(default_factory=list)

    def claims(self) -> list[AllowedClaim]:
        out = []
        for index, item in enumerate(self.allowed_claims, start=1):
            spec = item if isinstance(item, AllowedClaimIn) else AllowedClaimIn(claim_text=item)
            out.append(
                AllowedClaim(
                    claim_id=spec.claim_id or f"claim-{index}",
                    claim_type=spec.claim_type,
                    claim_text=spec.claim_text,
                    evidence_excerpts=tuple(spec.evidence_excerpts),
                    raw_paths=tuple(spec.raw_paths),
                )
            )
        return out


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``composer`` command group to the main parser."""
    add_check_command(
        subparsers,
        (
            "composer",
            "answer composition and the over-claim guard",
            "Answer composition and the over-claim guard.",
        ),
        (
            "guard",
            "check answers against the claims they may state",
            'Read one JSON object {"allowed_claims": [...], "answer": "..."} or JSON Lines of '
            'them, print one {"ok", "violations"} JSON line per object.',
        ),
        run_guard,
    )


def parse_guard_inputs(text: str) -> list[GuardInput]:
    return [model for _raw, model in parse_each(text, GuardInput)]


def run_guard(args: argparse.Namespace) -> int:
    """Guard every answer of FILE and print the results."""
    for item in parse_guard_inputs(read_text(args.file)):
        result = guard(item.claims(), item.answer, rejected_claims=item.rejected_claims)
        print_json_line({"ok": result.ok, "violations": list(result.violations)})
    return 0
