"""One claim against its gatekeeper-verified evidence: SUPPORTED, REFUTED or NOT_ENOUGH_INFO.

Why only verified bindings: the verifier does not re-check excerpts, it trusts
the gatekeeper's ``checked_bindings`` with status pass or backfilled, whose
``matched_text`` is the real ref text; a binding the gatekeeper failed or
skipped contributes nothing. A claim's evidence is those matched texts plus
the bindings' own excerpts (verified against them).

Why negative observations are special: ``$.no_evidence`` only says "this query
returned nothing", so such a claim is supported only when it is itself phrased
as "not found" and does not conclude the problem is absent.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from services.verifier.evidence_types import word_stem
from services.verifier.facts import Facts, extract
from services.verifier.match import FactResult, compare, identifier_aliases
from services.verifier.rules_file import OverclaimPhrases, VerifierRules
from services.verifier.structure import check_claim, check_negative, negated_words
from tracebound.bounds import LABEL_CHARS, cut_text
from tracebound.events import CheckedBinding, ClaimCheck, FactCheck

SUPPORTED = "SUPPORTED"
REFUTED = "REFUTED"
NOT_ENOUGH_INFO = "NOT_ENOUGH_INFO"


@dataclass(frozen=True, slots=True)
class Judgement:
    check: ClaimCheck
    facts: tuple[FactCheck, ...]
    excerpts: tuple[str, ...]


class BindingIndex:
    """Gatekeeper records per claim, consumed in claim order (claim ids may repeat)."""

    def __init__(self, records: Sequence[CheckedBinding]) -> None:
        self._by_claim: dict[str, list[CheckedBinding]] = {}
        for record in records:
            self._by_claim.setdefault(record.claim_id, []).append(record)
        self._cursor: dict[str, int] = {}

    def take(self, claim_id: str, count: int) -> list[CheckedBinding]:
        start = self._cursor.get(claim_id, 0)
        self._cursor[claim_id] = start + count
        return self._by_claim.get(claim_id, [])[start : start + count]


def claim_id_of(claim: Mapping[str, Any], index: int) -> str:
    """The id the gatekeeper reports for this claim."""
    raw = claim.get("claim_id")
    return raw if isinstance(raw, str) and raw else f"claims[{index}]"


def _verified(
    bindings: list[Any], records: list[CheckedBinding], statuses: tuple[str, ...]
) -> list[tuple[str, str, str]]:
    """(raw_path, matched_text, excerpt) of every binding the gatekeeper verified."""
    out = []
    for record in records:
        if record.status not in statuses or record.matched_text is None:
            continue
        index = record.binding_index
        binding = bindings[index] if 0 <= index < len(bindings) else {}
        binding = binding if isinstance(binding, dict) else {}
        excerpt = binding.get("evidence_excerpt")
        path = record.raw_path or binding.get("raw_path") or ""
        out.append((str(path), record.matched_text, excerpt if isinstance(excerpt, str) else ""))
    return out


def _cited_texts(verified: list[tuple[str, str, str]]) -> list[str]:
    """Each verified ref text, and each excerpt the ref text does not hold verbatim
    (the gatekeeper matches excerpts up to case, spacing and width); an excerpt
    inside its ref text says nothing the whole text does not, and is read once."""
    return [
        text
        for _, matched, excerpt in verified
        for text in (matched, "" if excerpt in matched else excerpt)
        if text
    ]


def _summary(results: list[FactResult]) -> str:
    parts = [f"{r.fact} ({r.kind}): {r.detail}" for r in results if not r.found]
    return "; ".join(parts)


def _phrased_not_found(text: str, rules: VerifierRules) -> bool:
    folded = unicodedata.normalize("NFKC", text).casefold().replace("’", "'")
    patterns = rules.doc.negative_observation.not_found_patterns
    return any(re.search(p, folded) for p in patterns)


def judge_claim(
    claim: Mapping[str, Any],
    index: int,
    bindings_index: BindingIndex,
    rules: VerifierRules,
    overclaim: OverclaimPhrases,
) -> Judgement:
    """Judge one claim of the executor output."""
    claim_id = claim_id_of(claim, index)
    claim_type = claim.get("claim_type")
    claim_type = claim_type if isinstance(claim_type, str) else ""
    text = claim.get("claim_text")
    bindings = claim.get("evidence_bindings")
    bindings = bindings if isinstance(bindings, list) else []
    records = bindings_index.take(claim_id, len(bindings))
    verified = _verified(bindings, records, rules.doc.verified_binding_statuses)
    paths = tuple(dict.fromkeys(path for path, _, _ in verified))
    excerpts = tuple(excerpt or matched for _, matched, excerpt in verified)

    def done(status: str, reason: str, results: Sequence[FactResult] = ()) -> Judgement:
        check = ClaimCheck(
            claim_id=claim_id,
            claim_type=claim_type,
            claim_text=text if isinstance(text, str) else "",
            status=status,
            reason=reason,
            raw_paths=paths,
        )
        facts = tuple(
            FactCheck(
                claim_id=claim_id,
                kind=r.kind,
                fact=r.fact,
                found=r.found,
                conflict=r.conflict,
                detail=cut_text(r.detail, LABEL_CHARS),
            )
            for r in results
        )
        return Judgement(check, facts, excerpts)

    if not isinstance(text, str) or not text.strip():
        return done(NOT_ENOUGH_INFO, "claim_text is missing or empty")
    if not verified:
        return done(NOT_ENOUGH_INFO, "no evidence binding of this claim passed the gatekeeper")
    neg_rules = rules.doc.negative_observation
    texts = _cited_texts(verified)
    evidence_text = "\n".join(texts)
    # a negative observation compares values; a positive claim's values are checked by
    # its structure, so only its negations are read here
    negative = claim_type in neg_rules.claim_types
    evidence = extract(evidence_text, rules, values=negative)
    claim_facts = extract(text, rules, values=negative)
    if negative:
        results, refuted = _negative(
            text,
            paths,
            texts,
            claim_facts=claim_facts,
            evidence=evidence,
            rules=rules,
            overclaim=overclaim,
        )
        if refuted is not None:
            return done(REFUTED, refuted, results)
    elif any(path == neg_rules.no_evidence_path for path in paths):
        return done(REFUTED, f"{neg_rules.no_evidence_path} cannot support a positive claim")
    else:
        results = _positive(
            text,
            texts,
            claim_facts=claim_facts,
            evidence=evidence,
            rules=rules,
            overclaim=overclaim,
        )
    status, reason = _settled(results)
    return done(status, reason, results)


def _negative(
    text: str,
    paths: Sequence[str],
    texts: Sequence[str],
    *,
    claim_facts: Facts,
    evidence: Facts,
    rules: VerifierRules,
    overclaim: OverclaimPhrases,
) -> tuple[list[FactResult], str | None]:
    """A negative observation's fact results, and why it is refuted (None: it is not)."""
    neg_rules = rules.doc.negative_observation
    results = compare(claim_facts, evidence, rules, negations=False)
    results += [
        FactResult(r.kind, r.fact, r.found, r.conflict, r.detail)
        for r in check_negative(text, texts, aliases=identifier_aliases(rules))
    ]
    phrased = _phrased_not_found(text, rules)
    over = overclaim.search(unicodedata.normalize("NFKC", text))
    detail = "phrased as 'not found'" if phrased else "not phrased as 'not found'"
    ok = phrased and over is None
    results.append(FactResult("negation", "not found", ok, not ok, detail))
    if not all(path == neg_rules.no_evidence_path for path in paths):
        return results, f"a negative observation may cite only {neg_rules.no_evidence_path}"
    if over is not None:
        return results, (
            f"claims absence of the problem ({over.group()!r}), not a query without hits"
        )
    if not phrased:
        return results, "a negative observation must say the query found no matching evidence"
    return results, None


def _positive(
    text: str,
    texts: Sequence[str],
    *,
    claim_facts: Facts,
    evidence: Facts,
    rules: VerifierRules,
    overclaim: OverclaimPhrases,
) -> list[FactResult]:
    """A positive claim's fact results: its structure against the cited items
    (:mod:`services.verifier.structure`), its negations, an overclaim among them."""
    results = [
        FactResult(r.kind, r.fact, r.found, r.conflict, r.detail)
        for r in check_claim(text, texts, aliases=identifier_aliases(rules))
    ]
    negated = negated_words(text)
    results += [
        r
        for r in compare(claim_facts, evidence, rules, values=False)
        if not (r.conflict and r.kind == "negation" and word_stem(r.fact.split()[-1]) in negated)
    ]
    over = overclaim.search(unicodedata.normalize("NFKC", text))
    if over is not None and not overclaim.search(evidence.search):
        detail = "conclusion not stated in evidence"
        results.append(FactResult("overclaim", over.group(), False, False, detail))
    return results


def _settled(results: list[FactResult]) -> tuple[str, str]:
    """The status a claim's fact results give it, and why."""
    if any(r.conflict for r in results):
        conflicts = _summary([r for r in results if r.conflict])
        return REFUTED, f"contradicted by the cited evidence: {conflicts}"
    if not all(r.found for r in results):
        return NOT_ENOUGH_INFO, f"not established by the cited evidence: {_summary(results)}"
    if not results:
        return (
            SUPPORTED,
            "gatekeeper-verified evidence; no number, identifier or negation to compare",
        )
    bound = "; ".join(f"{r.fact} {r.detail}" for r in results if r.kind == "number")
    reason = f"all {len(results)} facts are stated in the cited evidence"
    return SUPPORTED, f"{reason}: {bound}" if bound else reason
