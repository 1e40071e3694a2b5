"""A claim's facts checked as structure: every value, name and relation against the cited item.

Why structure and not words: a lexicon that binds a number to its metric by the
words beside it ("lag", "积压", "RPS") cannot keep up with real metric names, and
each word added reopens a swap. Here a claim's number is checked by its *value*
against the typed quantities of the item it cites: read in every form the tools
print (:mod:`services.verifier.quantities`), each with its role in the item (a
bound such as a threshold, limit or desired count, or a value) and any relation
the item states ("under 26000"). Only closed word classes are read: what makes a
number a bound, a comparison or an approximation, what links an inference, what
names an entity (``rules/claim-structure.json``).

The rules, per claim:

- its numbers, comparisons and fractions are checked by :mod:`numbers` against
  the item as :mod:`evidence_types` reads it;
- a relation it states must not be the opposite of the item's own, nor a state
  word ("rose", "failed") the opposite of the item's, nor a ``key=value`` a key
  the item states with another value;
- every identifier (a name with digits or separators, a host, a path, a URL, a
  clock time, a quoted string) must be written in the item, and so must a word
  that an entity noun names ("container X", "数据库 X");
- an observation that links its facts by an inference ("because", "so", "说明")
  states more than any item does.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from services.verifier.cues import CLAUSE, cue_pattern
from services.verifier.evidence_types import (
    CONTEXT_WORD,
    LATIN,
    SEPARATORS,
    Evidence,
    Result,
    cue_words,
    default_lexicon,
    key_values,
    known_terms,
    type_evidence,
    unit_words,
    word_stem,
)
from services.verifier.numbers import check_fractions, check_quantities
from services.verifier.quantities import (
    Lexicon,
    Token,
    normalize,
    read_tokens,
)

_NAMED_AFTER = re.compile(r"[ \t]*([a-z][a-z0-9_]*)")
_NAMED_BEFORE = re.compile(r"([a-z][a-z0-9_]*)[ \t]*(?:的)?[ \t]*$")
_CJK_CHAR = re.compile(r"[\u4e00-\u9fff]")


def check_tokens(
    tokens: Iterable[Token],
    evidence: Evidence,
    lex: Lexicon,
    aliases: dict[str, tuple[str, ...]] | None = None,
) -> list[Result]:
    """Every identifier of the claim, written in the cited item: as it is, without its
    separators (OOM-killed, OOMKilled), or as a declared alias (HikariCP, HikariPool);
    a product's name may stand where the item names no other."""
    known = known_terms(lex)
    units = unit_words(lex)
    results = []
    for token in tokens:
        norm = token.norm
        if token.kind == "quoted":  # its words written in the item; its numbers read apart
            words = [w for w in LATIN.findall(norm) if w not in units]
            found = norm in evidence.search or (
                bool(words)
                and all(w in evidence.words or word_stem(w) in evidence.stems for w in words)
            )
        elif token.kind in ("url", "path", "address", "time") or ":" in norm:
            found = norm in evidence.search
        elif token.kind == "name" and token.text.isalpha():  # CamelCase: CrashLoop, ShareLock
            found = norm in evidence.search or norm in known
        else:
            found = evidence.writes(norm)
        if not found and token.kind == "name":
            found = SEPARATORS.sub("", norm) in evidence.joined or any(
                alias in evidence.search for alias in (aliases or {}).get(norm, ())
            )
        detail = "written in the cited item" if found else "not written in the cited item"
        results.append(Result(token.kind, token.text, found, False, detail))
    return results


def check_entities(
    normal: str, tokens: list[Token], evidence: Evidence, lex: Lexicon
) -> list[Result]:
    """A plain word an entity noun names ("container ledger", "数据库 orders") must be written."""
    masked = list(normal.casefold())
    for token in tokens:  # an identifier is checked as one; here it only stops a name
        masked[token.start : token.end] = "#" * (token.end - token.start)
    text = "".join(masked)
    nouns = lex.words("entity_nouns")
    skip = _entity_skip(lex)
    named: list[str] = []
    for match in cue_pattern(nouns).finditer(text):
        following = _NAMED_AFTER.match(text[match.end() :])
        if following and following[1] not in skip:
            named.append(following[1])
        if not match.group().isascii():  # "orders 库": a Latin word right before a Chinese noun
            preceding = _NAMED_BEFORE.search(text[: match.start()])
            if preceding and preceding[1] not in skip:
                named.append(preceding[1])
    known = known_terms(lex)
    results = []
    for word in dict.fromkeys(named):
        if word in known or _is_english_word(word, evidence, lex):
            continue
        found = word in evidence.words or word_stem(word) in evidence.stems
        detail = "written in the cited item" if found else "not written in the cited item"
        results.append(Result("entity", word, found, False, detail))
    return results


def _entity_skip(lex: Lexicon) -> frozenset[str]:
    """Words after an entity noun that name no entity: stop words and the nouns themselves."""
    return lex.derived(
        "entity_skip",
        lambda x: frozenset(x.stop_words) | {w for w in x.words("entity_nouns") if w.isascii()},
    )


def _is_english_word(word: str, evidence: Evidence, lex: Lexicon) -> bool:
    """Words that a noun is followed by without naming anything ("the runbook says")."""
    return word in lex.stop_words or word in cue_words(lex)


def check_inference(normal: str, evidence: Evidence, lex: Lexicon) -> list[Result]:
    """An observation may not link its facts by an inference the item does not state.

    A link is allowed when the item states it too, or when all that follows it in
    the clause is written in the item ("原因是 Allocation Failure": the reason the
    log line gives) and the item does not hedge it ("likely causes: …" names
    candidates, not the cause).
    """
    folded = normal.casefold()
    hedged: bool | None = None  # asked of the item once a link needs it
    results = []
    for match in cue_pattern(lex.words("inference_cues")).finditer(folded):
        cue = match.group()
        if evidence.says((cue,)):
            continue
        if hedged is None:
            hedged = evidence.says(lex.words("hedge_cues"))
        if not hedged and _restates(folded[match.end() :], evidence, lex):
            continue
        detail = "an inference or conclusion is not an observation"
        results.append(Result("inference", cue, False, False, detail))
    return results


def _restates(rest: str, evidence: Evidence, lex: Lexicon) -> bool:
    """Whether a clause is nothing but words of the item (no CJK, no other word)."""
    end = CLAUSE.search(rest)
    clause = rest[: end.start()] if end else rest
    if _CJK_CHAR.search(clause):
        return False
    words = [w for w in LATIN.findall(clause) if w not in lex.stop_words]
    return bool(words) and all(w in evidence.words for w in words)


def check_antonyms(normal: str, evidence: Evidence, lex: Lexicon) -> list[Result]:
    """A state word whose opposite the item states ("succeeded" where it says "failed")."""
    folded = normal.casefold()
    results = []
    for one, other in lex.antonym_pairs:
        for said, opposite in ((one, other), (other, one)):
            if not any(word in folded for word in said):  # the pattern matches none of them
                continue
            if evidence.says(said) or not evidence.says(opposite):
                continue
            claim = cue_pattern(said).search(folded)
            if claim is None:
                continue
            results.append(
                Result("state", claim.group(), False, True, "the item states the opposite")
            )
    return results


def check_pairs(normal: str, evidence: Evidence) -> list[Result]:
    """A ``key=value`` whose key the item states only with other values.

    ``reason=Error`` where the item says ``reason=OOMKilled``: a label or field the
    item names is contradicted, not merely missing.
    """
    claimed = list(key_values(normal))
    stated = evidence.pairs if claimed else {}
    return [
        Result("pair", text, False, True, "the item states this key with another value")
        for key, value, text in claimed
        if stated.get(key) and value not in stated[key]
    ]


def negated_words(text: str, lex: Lexicon | None = None) -> frozenset[str]:
    """Stems of the words a negating phrase governs ("warns against restarting" → restart):
    the claim keeps the item's "do not restart" in other words."""
    lex = lex or default_lexicon()
    folded = normalize(text).casefold()
    heads: set[str] = set()
    for match in cue_pattern(lex.words("negating_phrases")).finditer(folded):
        following = CONTEXT_WORD.findall(folded[match.end() : match.end() + 40])[:3]
        heads.update(word_stem(w) for w in following if w not in lex.stop_words)
        heads.update(w for w in re.findall(r"[\u4e00-\u9fff]{2}", folded[match.end() :])[:1])
    return frozenset(heads)


def check_negative(
    text: str,
    evidence_texts: Sequence[str],
    lex: Lexicon | None = None,
    aliases: dict[str, tuple[str, ...]] | None = None,
) -> list[Result]:
    """What a negative observation names (its query's terms, quoted or not) and links."""
    return _checked(text, evidence_texts, lex, aliases, positive=False)


def check_claim(
    text: str,
    evidence_texts: Sequence[str],
    lex: Lexicon | None = None,
    aliases: dict[str, tuple[str, ...]] | None = None,
) -> list[Result]:
    """Every fact of a positive claim against the typed facts of its cited texts."""
    return _checked(text, evidence_texts, lex, aliases, positive=True)


def _checked(
    text: str,
    evidence_texts: Sequence[str],
    lex: Lexicon | None,
    aliases: dict[str, tuple[str, ...]] | None,
    *,
    positive: bool,
) -> list[Result]:
    lex = lex or default_lexicon()
    evidence = type_evidence(evidence_texts, lex)
    normal = normalize(text)
    tokens = read_tokens(normal, lex)
    values = check_quantities(normal, evidence, lex, tokens) if positive else []
    states = check_antonyms(normal, evidence, lex) if positive else []
    return [
        *values,
        *check_tokens(tokens, evidence, lex, aliases),
        *check_entities(normal, tokens, evidence, lex),
        *check_inference(normal, evidence, lex),
        *check_pairs(normal, evidence),
        *(check_fractions(normal, evidence) if positive else []),
        *states,
    ]
