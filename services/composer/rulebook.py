"""The rule files the composer writes and guards an answer by, as one value.

Why one value: the composer's template, its over-claim check and its answer
guard must judge by the same rule files a run was configured with. Passing the
three files together, and requiring them in every pure function, means no
helper deep in the guard can quietly fall back to the repository's files while
the handler was given candidates (a replay, a test, an operator's edit).
"""

from __future__ import annotations

from dataclasses import dataclass

from services.composer.guard_rules import GuardRules, default_guard_rules
from services.verifier.rules_file import (
    OverclaimPhrases,
    VerifierRules,
    default_overclaim_phrases,
    default_verifier_rules,
)


@dataclass(frozen=True, slots=True)
class ComposerRules:
    """Verifier rules (facts, aliases, negations), over-claim phrases and guard phrases."""

    verifier: VerifierRules
    phrases: OverclaimPhrases
    guard: GuardRules

    @classmethod
    def shipped(cls, verifier: VerifierRules | None = None) -> ComposerRules:
        """The repository's files; ``verifier`` replaces the verifier rules alone."""
        return cls(
            verifier if verifier is not None else default_verifier_rules(),
            default_overclaim_phrases(),
            default_guard_rules(),
        )
