"""What an answer asserts beyond its facts: causal links, and absence over a negative observation.

Why separate from the fact checks: a number or identifier is either in the
allowed material or not, but a cause or a conclusion is a *link* the answer
draws. "CPU at 92%, caused by the deploy" carries only allowed facts and still
states what nothing verified; "the query found no pool errors" turns into
"there is no pool problem" with one negation. So:

* a causal phrase (``rules/answer-guard.json``) is allowed only inside the
  words of an allowed claim or hypothesis that itself states a link (or, word
  for word, inside an allowed gap or action, which gives a reason to check);
* over a negative observation, no text outside the composer's fixed phrases,
  the verifier's "found nothing" phrasing and the verbatim allowed material may
  negate (shared lexicon, ``rules/negation.json``) or assert absence, health or
  exclusion — in either language.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence

from services.common.negation import Negations, default_negations
from services.composer.checks import restated
from services.composer.guard_rules import GuardRules, template_fragments
from services.composer.templates import TemplatesFile, default_templates
from services.verifier.ignorecase import fold, foldable
from services.verifier.rules_file import VerifierRules
from tracebound.events import AllowedClaim

SENTENCE_END = re.compile(r"(?<=[.!?;])(?:\s+|$)|[。！？；\n]")
_CLAUSE_END = re.compile(r"(?<=[.!?;:])(?:\s+|$)|[。！？；：\n]")
_REST_OF_CLAUSE = r"[^.!?;,。！？；，\n]*"
_GAP = "\n"


def sentences(text: str) -> list[str]:
    """The non-blank sentences of ``text``, in order (either language)."""
    return [s.strip() for s in SENTENCE_END.split(text) if s and s.strip()]


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).strip()


def _blank(text: str, pieces: Iterable[str]) -> str:
    """``text`` with every occurrence of each piece replaced by a sentence break.

    A piece absent from the folded text is passed over without a regex search
    (:mod:`~services.verifier.ignorecase`); the text is folded again after a change.
    """
    folded = fold(text)
    for piece in sorted({p for p in pieces if p}, key=len, reverse=True):
        if foldable(piece) and fold(piece) not in folded:
            continue
        blanked = re.sub(re.escape(piece), _GAP, text, flags=re.IGNORECASE)
        if blanked != text:
            text, folded = blanked, fold(blanked)
    return text


def fixed_phrases(templates: TemplatesFile | None = None) -> tuple[str, ...]:
    """The literal parts of the composer's phrases in both languages."""
    doc = templates if templates is not None else default_templates()
    values = [v for p in doc.languages.values() for v in p.model_dump().values()]
    return template_fragments(values)


def _links(text: str, guard_rules: GuardRules) -> list[str]:
    """The causal phrases of ``text``, casefolded, in order."""
    return [m.group().casefold() for m in guard_rules.causal.finditer(text)]


def causal_links(
    text: str,
    sources: Sequence[str],
    guard_rules: GuardRules,
    rules: VerifierRules,
    verbatim: Sequence[str] = (),
) -> list[str]:
    """Causal phrases of ``text`` that no allowed claim or hypothesis (``sources``) states.

    A sentence may restate a stating clause in its own words around it (a
    hypothesis' "Possible cause …:" lead-in is not needed to repeat its cause),
    but only with the links that clause draws: "Likely causes: pods are killed"
    does not license "pods are killed, which led to the checkout errors".
    ``verbatim`` material (a runbook check's "because a restart destroys the
    evidence") may keep its reason only word for word.
    """
    folded = [_fold(s) for s in sources]
    stating = [c for s in folded for c in _CLAUSE_END.split(s) if guard_rules.causal.search(c)]
    out = []
    for sentence in sentences(_blank(text, [*folded, *(_fold(v) for v in verbatim)])):
        links = _links(sentence, guard_rules)
        if not links:
            continue
        if any(
            set(links) <= set(_links(source, guard_rules)) and restated(source, sentence, rules)
            for source in stating
        ):
            continue
        licensed = {link for source in stating for link in _links(source, guard_rules)}
        link = next((link for link in links if link not in licensed), links[0])
        out.append(f"causal link {link!r} that no allowed claim or hypothesis states")
    return list(dict.fromkeys(out))


def absence_claims(
    text: str,
    allowed: Sequence[AllowedClaim],
    tolerated: Sequence[str],
    guard_rules: GuardRules,
    rules: VerifierRules,
    *,
    negations: Negations | None = None,
    templates: TemplatesFile | None = None,
) -> list[str]:
    """Assertions of absence, health or exclusion, when a claim is a negative observation.

    ``tolerated`` is the verbatim material the composer may include (claims,
    hypotheses, gaps, actions): it was screened where it was made.
    """
    negative = rules.doc.negative_observation
    if not any(c.claim_type in negative.claim_types for c in allowed):
        return []
    lexicon = negations if negations is not None else default_negations()
    rest = _blank(text, [_fold(t) for t in tolerated] + list(fixed_phrases(templates)))
    for pattern in negative.not_found_patterns:
        rest = re.sub(pattern, _GAP, rest, flags=re.IGNORECASE)
    # A hedge withholds a conclusion for the rest of its clause ("does not mean … is fine").
    rest = re.sub(f"(?:{guard_rules.hedges.pattern}){_REST_OF_CLAUSE}", _GAP, rest, flags=re.I)
    out = []
    for sentence in sentences(rest):
        folded = unicodedata.normalize("NFKC", sentence).casefold()
        match = guard_rules.absence.search(folded)
        if match is not None:
            out.append(f"asserts absence over a negative observation: {match.group()!r}")
        elif lexicon.in_text(folded):
            out.append(f"asserts absence over a negative observation: {sentence!r}")
    return list(dict.fromkeys(out))
