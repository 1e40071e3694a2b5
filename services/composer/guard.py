"""The answer guard: nothing in an answer that the allowed claims do not carry.

Why a guard after a deterministic composer: answers may also come from a model
(``llm`` composer) or be edited downstream, and the promise "nothing is said
that was not seen" must hold for all of them. It flags:

* over-claim phrases ("ruled out", 问题不存在 …) — they turn "the query found
  nothing" into a conclusion about the system. A phrase is tolerated only
  where it repeats a verified positive claim verbatim, or, when no allowed
  claim is a negative observation, where some positive claim states it;
* every number (units normalised, as the verifier reads them) and identifier
  that no allowed claim's text or excerpts contain;
* any sentence restating a claim the verifier refuted.

A violating answer is replaced by :func:`safe_answer`, the template answer.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from services.composer.checks import foreign_facts, overclaims, restated
from services.composer.compose import compose
from services.verifier.rules_file import (
    OverclaimPhrases,
    VerifierRules,
    default_overclaim_phrases,
    default_verifier_rules,
)
from tracebound.events import AllowedClaim, ComposerInput, GuardResult

_SENTENCE_END = re.compile(r"(?<=[.!?;])(?:\s+|$)|[。！？；\n]")


def guard(
    allowed_claims: Sequence[AllowedClaim],
    answer: str,
    *,
    rejected_claims: Sequence[str] = (),
    rules: VerifierRules | None = None,
    phrases: OverclaimPhrases | None = None,
) -> GuardResult:
    """Check one answer against the claims it may state."""
    rules = rules if rules is not None else default_verifier_rules()
    phrases = phrases if phrases is not None else default_overclaim_phrases()
    text = unicodedata.normalize("NFKC", answer)
    violations = overclaims(allowed_claims, text, phrases, rules)
    violations += foreign_facts(allowed_claims, text, rules)
    for rejected in rejected_claims:
        for sentence in _SENTENCE_END.split(text):
            if rejected.strip() and sentence.strip() and restated(rejected, sentence, rules):
                violations.append(f"restates a rejected claim: {sentence.strip()!r}")
                break
    return GuardResult(ok=not violations, violations=tuple(violations), replaced=False)


def safe_answer(material: ComposerInput, language: str) -> str:
    """The template answer for ``material``: what replaces a violating answer."""
    return compose(material, language).user_facing_answer


def enforce(
    material: ComposerInput,
    language: str,
    answer: str,
    *,
    rejected_claims: Sequence[str] = (),
) -> tuple[str, GuardResult]:
    """The answer to publish and the guard result: the safe answer replaces a violating one."""
    result = guard(material.allowed_claims, answer, rejected_claims=rejected_claims)
    if result.ok:
        return answer, result
    return safe_answer(material, language), result.model_copy(update={"replaced": True})
