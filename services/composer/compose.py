"""The deterministic (``rules``) composer: the verifier's allowed material, in fixed phrases.

Why templates and verbatim claims: the composer adds no fact, no cause and no
number; an observation is stated by its verified claim_text, a negative
observation only as "the current query found no matching evidence for …"
(its subject cut from the claim itself), hypotheses only under an
"unconfirmed" heading, and actions only when they gather evidence. Every
hypothesis, action and gap is screened by the guard's own checks first, so an
item naming a number or identifier no allowed claim carries is left out.

PASS states the findings; LOW_CONFID says what is supported and what could not
be established; REJECT asserts nothing.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from services.composer.checks import foreign_facts, overclaims
from services.composer.rulebook import ComposerRules
from services.composer.templates import Phrases, TemplatesFile, language_of, phrases
from services.verifier.rules_file import OverclaimPhrases, VerifierRules
from tracebound.events import AllowedClaim, ComposerInput, RecommendedAction

_LEAD = re.compile(
    r"^(?:\s|,|:|any\b|matching\b|relevant\b|evidence\b|results?\b|hits?\b|of\b|for\b|on\b"
    r"|about\b|的|任何|相关)+",
    re.IGNORECASE,
)
_TRIM = " \t.。,，;；:：!！?？"
_NO_WERE_FOUND = re.compile(
    r"^\s*no\s+|\s+(?:was|were)\s+(?:found|retrieved|returned|matched)\s*$", re.IGNORECASE
)


@dataclass(frozen=True, slots=True)
class ComposedAnswer:
    """The composer output of the contract (docs/contracts.md)."""

    answer_summary: str
    recommended_actions: tuple[RecommendedAction, ...]
    user_facing_answer: str


def negative_subject(claim_text: str, rules: VerifierRules) -> str:
    """What a negative observation's query was about, as the claim words it; '' if unclear."""
    text = unicodedata.normalize("NFKC", claim_text).strip()
    matches = [
        m
        for pattern in rules.doc.negative_observation.not_found_patterns
        for m in [re.search(pattern, text, re.IGNORECASE)]
        if m is not None
    ]
    if not matches:
        return ""
    first = min(matches, key=lambda m: m.start())
    subject = _LEAD.sub("", text[first.end() :]).strip(_TRIM)
    if not subject:
        subject = _LEAD.sub("", _NO_WERE_FOUND.sub("", first.group())).strip(_TRIM)
    return subject


def _statement(claim: AllowedClaim, p: Phrases, language: str, rules: VerifierRules) -> str:
    if claim.claim_type not in rules.doc.negative_observation.claim_types:
        return claim.claim_text.strip()
    subject = negative_subject(claim.claim_text, rules) or p.negative_subject_fallback
    if language == "zh":
        subject = (" " if subject[:1].isascii() else "") + subject
        subject += " " if subject[-1:].isascii() else ""
    return p.negative.format(subject=subject)


def _screened(
    items: Sequence[str],
    allowed: Sequence[AllowedClaim],
    rules: VerifierRules,
    over: OverclaimPhrases,
) -> list[str]:
    """Items that carry no foreign fact and no over-claim."""
    kept = []
    for item in items:
        text = unicodedata.normalize("NFKC", item).strip()
        clean = text and not foreign_facts(allowed, text, rules)
        if clean and not overclaims(allowed, text, over, rules):
            kept.append(text)
    return list(dict.fromkeys(kept))


def _section(header: str, items: Sequence[str], p: Phrases) -> list[str]:
    return ["", header, *(p.bullet + item for item in items)] if items else []


def hypothesis_lines(
    material: ComposerInput,
    language: str,
    book: ComposerRules,
    *,
    templates: TemplatesFile | None = None,
    shown: str = "",
) -> list[str]:
    """The hypotheses section: each allowed hypothesis that passes the screen and that
    ``shown`` (an answer a model wrote) does not already hold, and a note when the screen
    withheld one. Nothing for a verdict that states nothing."""
    if material.verdict not in ("PASS", "LOW_CONFID"):
        return []
    rules, over, p = book.verifier, book.phrases, phrases(language_of(language), templates)
    hypotheses = _screened(material.allowed_hypotheses, material.allowed_claims, rules, over)
    # a hypothesis the screen drops is said to be withheld, never dropped silently
    withheld = len(hypotheses) < len(dict.fromkeys(h.strip() for h in material.allowed_hypotheses))
    written = unicodedata.normalize("NFKC", shown)
    lines = _section(p.hypotheses_header, [h for h in hypotheses if h not in written], p)
    if withheld and p.hypotheses_withheld not in written:
        lines += [p.hypotheses_withheld] if lines else ["", p.hypotheses_withheld]
    return lines


def compose(
    material: ComposerInput,
    language: str,
    book: ComposerRules,
    *,
    templates: TemplatesFile | None = None,
) -> ComposedAnswer:
    """Compose the answer for one verdict; pure and deterministic."""
    rules, over = book.verifier, book.phrases
    lang = language_of(language)
    p = phrases(lang, templates)
    verdict = material.verdict
    allowed = material.allowed_claims if verdict in ("PASS", "LOW_CONFID") else ()
    statements = [_statement(c, p, lang, rules) for c in allowed]
    actions = _screened(material.recommended_actions, allowed, rules, over)

    if verdict == "PASS" and statements:
        lines = [p.pass_intro, *(p.bullet + s for s in statements)]
        summary = (
            statements[0] if len(statements) == 1 else p.more_findings.format(first=statements[0])
        )
    elif verdict in ("PASS", "LOW_CONFID"):
        lines = [p.low_intro, ""]
        if statements:
            lines += [p.low_supported_header, *(p.bullet + s for s in statements)]
        else:
            lines.append(p.low_none_supported)
        missing = _screened(material.missing_info, allowed, rules, over)
        lines += _section(p.low_missing_header, missing or [p.low_missing_fallback], p)
        summary = p.low_summary if statements else p.no_claims_summary
    else:
        lines = [p.reject_intro]
        summary = p.reject_summary
    lines += hypothesis_lines(material, language, book, templates=templates)
    lines += _section(p.actions_header, actions, p)
    return ComposedAnswer(
        answer_summary=summary,
        recommended_actions=tuple(
            RecommendedAction(action_text=a, reason=p.action_reason) for a in actions
        ),
        user_facing_answer="\n".join(lines),
    )
