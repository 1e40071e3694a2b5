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
* a causal or explanatory link ("caused by", 导致 …) that no allowed claim or
  hypothesis states, and, over a negative observation, any assertion of
  absence, health or exclusion in either language (``assertions``);
* any sentence restating a claim the verifier refuted.

A violating answer is replaced by :func:`safe_answer`, the template answer.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

from services.composer.assertions import absence_claims, causal_links, sentences
from services.composer.checks import foreign_facts, overclaims, restated
from services.composer.compose import compose
from services.composer.rulebook import ComposerRules
from tracebound.events import AllowedClaim, ComposerInput, GuardResult


def guard(
    allowed_claims: Sequence[AllowedClaim],
    answer: str,
    *,
    rejected_claims: Sequence[str] = (),
    hypotheses: Sequence[str] = (),
    notes: Sequence[str] = (),
    quoted: Sequence[str] = (),
    rules: ComposerRules,
) -> GuardResult:
    """Check one answer against the claims it may state.

    ``hypotheses`` may state causes (under the composer's "unconfirmed"
    heading); ``notes`` are the gaps and actions the composer may quote as they
    are. Neither adds a number or identifier: those come from the claims, or
    from ``quoted`` — the opening lines that quote the request's own alerts
    (:func:`~services.composer.opening.opening_lines`), for a published answer.
    """
    facts = rules.verifier
    text = unicodedata.normalize("NFKC", answer)
    claims = [c.claim_text for c in allowed_claims]
    violations = overclaims(allowed_claims, text, rules.phrases, facts)
    violations += foreign_facts(allowed_claims, text, facts, quoted)
    violations += causal_links(text, [*claims, *hypotheses], rules.guard, facts, notes)
    tolerated = [*claims, *hypotheses, *notes, *quoted]
    violations += absence_claims(text, allowed_claims, tolerated, rules.guard, facts)
    for rejected in rejected_claims:
        for sentence in sentences(text):
            if rejected.strip() and restated(rejected, sentence, facts):
                violations.append(f"restates a rejected claim: {sentence!r}")
                break
    return GuardResult(ok=not violations, violations=tuple(violations), replaced=False)


def guard_material(
    material: ComposerInput,
    text: str,
    rules: ComposerRules,
    *,
    rejected_claims: Sequence[str] = (),
    quoted: Sequence[str] = (),
) -> GuardResult:
    """:func:`guard` with the hypotheses, gaps and actions of ``material``."""
    return guard(
        material.allowed_claims,
        text,
        rejected_claims=rejected_claims,
        hypotheses=material.allowed_hypotheses,
        notes=[*material.missing_info, *material.recommended_actions],
        quoted=quoted,
        rules=rules,
    )


def safe_answer(material: ComposerInput, language: str, rules: ComposerRules) -> str:
    """The template answer for ``material``: what replaces a violating answer."""
    return compose(material, language, rules).user_facing_answer


def enforce(
    material: ComposerInput,
    language: str,
    answer: str,
    rules: ComposerRules,
    *,
    rejected_claims: Sequence[str] = (),
) -> tuple[str, GuardResult]:
    """The answer to publish and the guard result: the safe answer replaces a violating one."""
    result = guard_material(material, answer, rules, rejected_claims=rejected_claims)
    if result.ok:
        return answer, result
    return safe_answer(material, language, rules), result.model_copy(update={"replaced": True})
