"""The one negation lexicon: ``rules/negation.json`` loaded, validated and applied.

Why one lexicon: the gatekeeper asks whether an excerpt cuts a negation off its
clause, the verifier whether a claim adds or drops one, and the answer guard
reads facts through the verifier. With a list each they disagreed (非常 "very"
was a negation to the gatekeeper, not to the verifier), so a verbatim excerpt
was rejected that the verifier would have read correctly. Cues, exemptions,
the scope and the cross-language equivalents are data, reviewed and versioned
like the other rule files; a malformed file raises
:class:`~tracebound.errors.ConfigError` naming it.

All lookups expect text that is NFKC-normalised and casefolded, as both the
gatekeeper's and the verifier's normalisations produce.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from services.common.rules_json import describe, read_json
from tracebound import resources
from tracebound.errors import ConfigError

NEGATION_PATH = resources.path("rules", "negation.json")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _non_blank(value: tuple[str, ...]) -> tuple[str, ...]:
    if any(not item.strip() for item in value):
        raise ValueError("entries must not be blank")
    return value


class EnglishRules(_Strict):
    cues: tuple[str, ...] = Field(min_length=1)
    suffixes: tuple[str, ...] = ()
    exempt: tuple[str, ...] = ()
    stopwords: tuple[str, ...] = ()

    @field_validator("cues")
    @classmethod
    def _single_words(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if any(len(cue.split()) != 1 for cue in value):
            raise ValueError("English cues are single words ('did not' is 'not' after a stopword)")
        return value

    _blank = field_validator("suffixes", "exempt")(_non_blank)


class ChineseRules(_Strict):
    cues: tuple[str, ...] = Field(min_length=1)
    exempt: tuple[str, ...] = ()

    _blank = field_validator("cues", "exempt")(_non_blank)


class NegationFile(_Strict):
    version: str = Field(min_length=1)
    description: str = ""
    scope_words: int = Field(ge=1, le=10)
    en: EnglishRules
    zh: ChineseRules
    equivalents: dict[str, tuple[str, ...]] = Field(default_factory=dict)


def _fold(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def _longest_first(items: Sequence[str]) -> tuple[str, ...]:
    return tuple(sorted({_fold(item) for item in items}, key=len, reverse=True))


@dataclass(frozen=True, eq=False)
class Negations:
    """A validated lexicon; hashed by identity so callers can cache what they derive."""

    version: str
    source: str
    scope_words: int
    en_cues: frozenset[str]
    en_suffixes: tuple[str, ...]
    en_exempt: tuple[tuple[str, ...], ...]
    stopwords: frozenset[str]
    zh_cues: tuple[str, ...]
    zh_exempt: tuple[str, ...]
    equivalents: dict[str, tuple[str, ...]]
    pattern: re.Pattern[str]

    def in_text(self, text: str, start: int = 0, end: int | None = None) -> bool:
        """A cue outside every exemption occurs in ``text[start:end]``."""
        stop = len(text) if end is None else end
        return any(m.lastgroup == "cue" for m in self.pattern.finditer(text, start, stop))

    def english_cue(self, words: Sequence[str], index: int) -> bool:
        """``words[index]`` negates, and does not open an exempt phrase ("not only")."""
        word = words[index]
        if word not in self.en_cues and not word.endswith(self.en_suffixes):
            return False
        return not any(tuple(words[index : index + len(e)]) == e for e in self.en_exempt)

    def chinese_cue(self, run: str, index: int) -> tuple[str, int]:
        """The cue starting at ``run[index]`` ("" if none) and how many characters it covers.

        An exemption covers its whole length, so no cue inside it is read.
        """
        exempt = next((e for e in self.zh_exempt if run.startswith(e, index)), None)
        if exempt is not None:
            return "", len(exempt)
        cue = next((c for c in self.zh_cues if run.startswith(c, index)), "")
        return cue, len(cue) or 1

    def same_negation(self, zh_head: str, en_scope: Sequence[str]) -> bool:
        """An English negation of ``en_scope`` (word stems) negates the Chinese ``zh_head``."""
        # the head is the two characters after the cue: 不符已 negates 符 (match)
        stems = self.equivalents.get(zh_head) or self.equivalents.get(zh_head[:1], ())
        return any(word.startswith(s) for s in stems for word in en_scope)


def _pattern(doc: NegationFile) -> re.Pattern[str]:
    """``skip`` matches an exemption, ``cue`` a negation; exemptions are tried first."""

    def alternation(items: Sequence[str]) -> str:
        return "|".join(re.escape(i) for i in _longest_first(items))

    skips = [rf"(?<![\w'])(?:{alternation(doc.en.exempt)})(?![\w'])"] if doc.en.exempt else []
    if doc.zh.exempt:
        skips.append(f"(?:{alternation(doc.zh.exempt)})")
    cues = [
        rf"(?<![\w'])(?:{alternation(doc.en.cues)})(?![\w'])",
        f"(?:{alternation(doc.zh.cues)})",
    ]
    cues += [rf"{re.escape(_fold(s))}(?![\w'])" for s in doc.en.suffixes]
    skip = f"(?P<skip>{'|'.join(skips)})|" if skips else ""
    return re.compile(f"{skip}(?P<cue>{'|'.join(cues)})")


def parse_negations(data: object, source: str = "<negation lexicon>") -> Negations:
    """Validate an already-decoded lexicon document."""
    try:
        doc = NegationFile.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{source}: invalid negation lexicon: {describe(exc)}") from None
    cues = {_fold(c) for c in doc.en.cues}
    exempt = tuple(tuple(_fold(e).split()) for e in doc.en.exempt)
    if any(words[0] not in cues for words in exempt):
        raise ConfigError(f"{source}: invalid negation lexicon: en.exempt must start with a cue")
    return Negations(
        version=doc.version,
        source=source,
        scope_words=doc.scope_words,
        en_cues=frozenset(cues),
        en_suffixes=tuple(_fold(s) for s in doc.en.suffixes),
        en_exempt=exempt,
        stopwords=frozenset(_fold(w) for w in doc.en.stopwords),
        zh_cues=_longest_first(doc.zh.cues),
        zh_exempt=_longest_first(doc.zh.exempt),
        equivalents={_fold(k): tuple(_fold(v) for v in vs) for k, vs in doc.equivalents.items()},
        pattern=_pattern(doc),
    )


def load_negations(path: str | Path | None = None) -> Negations:
    """Read and validate a lexicon file; the default is the repository's own."""
    lexicon_path = Path(path) if path is not None else NEGATION_PATH
    return parse_negations(read_json(lexicon_path, "negation lexicon"), str(lexicon_path))


@cache
def default_negations() -> Negations:
    """The repository's lexicon, loaded once per process."""
    return load_negations()
