"""``tracebound composer guard FILE``.

Why a CLI: operators and evaluations check any answer text (a model's, an
edited one, a stored one) against the claims it was allowed to state, without
Kafka. One ``{"ok", "violations"}`` JSON line is printed per input object, in
input order; exit 0 whenever the guard ran (violations are a result), exit 2
on invalid input. All input is validated before anything is printed.
"""

from __future__ import annotations

import argparse
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from services.composer.guard import guard
from services.composer.opening import opening_lines
from services.composer.rulebook import ComposerRules
from tracebound.events import Alert, AllowedClaim
from tracebound.jsonio import add_check_command, parse_each, print_json_line, read_text


class GuardInput(BaseModel):
    """One guard request: the answer, the claims it may state and the claims refuted.

    ``allowed_hypotheses`` are the verdict's hypotheses: the causes they state
    may be repeated (as under the composer's "unconfirmed" heading); ``alerts``
    are the request's alerts, whose opening lines a published answer quotes.

    An allowed claim is an ``AllowedClaim`` record or just its text; a claim
    without an id is numbered by its position (``claim-1`` …) and one without a
    type is an observation.
    """

    model_config = ConfigDict(extra="forbid")

    allowed_claims: list[AllowedClaim]
    answer: str
    rejected_claims: list[str] = Field(default_factory=list)
    allowed_hypotheses: list[str] = Field(default_factory=list)
    alerts: list[Alert] = Field(default_factory=list)

    @field_validator("allowed_claims", mode="before")
    @classmethod
    def _complete(cls, value: Any) -> Any:
        if not isinstance(value, list):
            return value
        out = []
        for index, item in enumerate(value, start=1):
            claim = {"claim_text": item} if isinstance(item, str) else item
            if isinstance(claim, dict):
                claim = {"claim_type": "observation", **claim}
                if claim.get("claim_id") is None:
                    claim["claim_id"] = f"claim-{index}"
            out.append(claim)
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
    rules = ComposerRules.shipped()
    for item in parse_guard_inputs(read_text(args.file)):
        result = guard(
            item.allowed_claims,
            item.answer,
            rejected_claims=item.rejected_claims,
            hypotheses=item.allowed_hypotheses,
            quoted=[line for lang in ("en", "zh") for line in opening_lines(item.alerts, lang)],
            rules=rules,
        )
        print_json_line({"ok": result.ok, "violations": list(result.violations)})
    return 0
