"""The verifier's rule files: ``rules/verifier-rules.json`` and ``rules/overclaim-phrases.json``.

Why files: the unit table, identifier shapes and the phrasings a negative
observation may use are reviewed and versioned as data, while the judgement
stays deterministic code. Negation cues are not here: they are the shared
lexicon of :mod:`services.common.negation`, which a rule set carries. Why
strict: a typo must never silently turn a check off, so a missing field, an
unknown dimension or a regex that does not compile raises
:class:`~tracebound.errors.ConfigError` naming the file.

The over-claim phrases live in their own file because two roles read them: the
verifier refuses a negative observation that carries one, and the composer's
answer guard flags them in answers.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from services.common.negation import Negations, default_negations
from services.common.rules_json import describe, read_json
from services.verifier.ignorecase import fold, foldable, to_ascii
from tracebound import resources
from tracebound.errors import ConfigError

VERIFIER_RULES_PATH = resources.path("rules", "verifier-rules.json")
OVERCLAIM_PHRASES_PATH = resources.path("rules", "overclaim-phrases.json")

Dimension = Literal["duration", "percent", "bytes"]
IdentifierKind = Literal[
    "time", "host", "pod", "service", "error", "name", "path", "code", "version", "token"
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _compiles(pattern: str) -> str:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"regex {pattern!r} does not compile: {exc}") from None
    return pattern


class Unit(_Strict):
    dimension: Dimension
    factor: float = Field(gt=0)


class IdentifierPattern(_Strict):
    kind: IdentifierKind
    pattern: str = Field(min_length=1)

    _check = field_validator("pattern")(_compiles)


class AttributeAliases(_Strict):
    """The words that name one measured attribute, per language.

    ``dimensions`` limits the units the attribute can carry (empty: any), so
    "for" binds "for 5m" to duration but never "for payment-service 92%".
    """

    dimensions: tuple[Dimension | Literal["plain"], ...] = ()
    en: tuple[str, ...] = ()
    zh: tuple[str, ...] = ()

    @field_validator("en", "zh")
    @classmethod
    def _not_blank(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if any(not alias.strip() for alias in value):
            raise ValueError("empty alias")
        return value


class NegativeObservationRules(_Strict):
    claim_types: tuple[str, ...] = Field(min_length=1)
    no_evidence_path: str = Field(min_length=1)
    not_found_patterns: tuple[str, ...] = Field(min_length=1)

    @field_validator("not_found_patterns")
    @classmethod
    def _patterns(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(_compiles(p) for p in value)


class ActionRules(_Strict):
    evidence_verbs: tuple[str, ...] = Field(min_length=1)
    remediation_verbs: tuple[str, ...] = ()


class AiopsRules(_Strict):
    version: str = Field(min_length=1)
    evidence_tools: tuple[str, ...] = Field(min_length=1)
    target_labels: tuple[str, ...] = Field(min_length=1)
    subject_kinds: tuple[IdentifierKind, ...] = Field(min_length=1)


class VerifierRulesFile(_Strict):
    version: str = Field(min_length=1)
    description: str = ""
    units: dict[str, Unit] = Field(min_length=1)
    identifier_patterns: tuple[IdentifierPattern, ...] = Field(min_length=1)
    identifier_aliases: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    attributes: dict[str, AttributeAliases] = Field(default_factory=dict)
    negative_observation: NegativeObservationRules
    actions: ActionRules
    verified_binding_statuses: tuple[str, ...] = Field(min_length=1)
    aiops: AiopsRules


class OverclaimFile(_Strict):
    version: str = Field(min_length=1)
    description: str = ""
    en: tuple[str, ...] = Field(min_length=1)
    zh: tuple[str, ...] = Field(min_length=1)


@dataclass(frozen=True, eq=False)
class VerifierRules:
    """A validated verifier rule set; hashed by identity so extractors can cache on it."""

    source: str
    doc: VerifierRulesFile
    negations: Negations

    @property
    def version(self) -> str:
        return self.doc.version


@dataclass(frozen=True, eq=False)
class OverclaimPhrases:
    """Compiled over-claim phrases (English on word boundaries, Chinese as substrings)."""

    version: str
    source: str
    phrases: tuple[str, ...]
    pattern: re.Pattern[str]
    # What text must contain, folded, for ``pattern`` to match it; None when a phrase
    # is not foldable (then no shortcut). See :mod:`services.verifier.ignorecase`.
    needles: tuple[str, ...] | None = None

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        """The phrases in ``text``, as ``pattern.finditer`` finds them.

        The pattern tries every alternative at every position (≈ 0.5 ms per KB); text
        whose folded form contains no needle (the usual text) is told apart first.
        """
        if self.needles is not None:
            folded = fold(text)
            if not any(needle in folded for needle in self.needles):
                return iter(())
        return self.pattern.finditer(text)

    def search(self, text: str) -> re.Match[str] | None:
        """The first phrase in ``text``, as ``pattern.search`` finds it."""
        return next(self.finditer(text), None)


def parse_verifier_rules(
    data: object, source: str = "<verifier rules>", negations: Negations | None = None
) -> VerifierRules:
    """Validate an already-decoded verifier rules document.

    ``negations`` is the shared lexicon facts are read with (default: the repository's).
    """
    try:
        doc = VerifierRulesFile.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{source}: invalid verifier rules: {describe(exc)}") from None
    lexicon = negations if negations is not None else default_negations()
    return VerifierRules(source=source, doc=doc, negations=lexicon)


def load_verifier_rules(path: str | Path | None = None) -> VerifierRules:
    rules_path = Path(path) if path is not None else VERIFIER_RULES_PATH
    return parse_verifier_rules(read_json(rules_path, "verifier rules file"), str(rules_path))


def parse_overclaim_phrases(data: object, source: str = "<overclaim phrases>") -> OverclaimPhrases:
    """Validate an over-claim phrase document and compile one matcher for all phrases."""
    try:
        doc = OverclaimFile.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{source}: invalid over-claim phrases: {describe(exc)}") from None
    parts = [r"(?<![A-Za-z0-9_])" + re.escape(p) + r"(?![A-Za-z0-9_])" for p in doc.en]
    parts += [re.escape(p) for p in doc.zh]
    phrases = doc.en + doc.zh
    if any(not p.strip() for p in phrases):
        raise ConfigError(f"{source}: invalid over-claim phrases: empty phrase")
    pattern = re.compile("|".join(sorted(parts, key=len, reverse=True)), re.IGNORECASE)
    return OverclaimPhrases(doc.version, source, phrases, pattern, _needles(phrases))


def _needles(phrases: tuple[str, ...]) -> tuple[str, ...] | None:
    """The folded phrases (:mod:`~services.verifier.ignorecase`), if all are foldable."""
    if not all(foldable(p) for p in phrases):
        return None
    to_ascii()  # made now (≈ 0.5 s once per process), not while a request waits
    return tuple(fold(p) for p in phrases)


def load_overclaim_phrases(path: str | Path | None = None) -> OverclaimPhrases:
    phrases_path = Path(path) if path is not None else OVERCLAIM_PHRASES_PATH
    data = read_json(phrases_path, "over-claim phrases file")
    return parse_overclaim_phrases(data, str(phrases_path))


@cache
def default_verifier_rules() -> VerifierRules:
    """The repository's verifier rules, loaded once per process."""
    return load_verifier_rules()


@cache
def default_overclaim_phrases() -> OverclaimPhrases:
    """The repository's over-claim phrases, loaded once per process."""
    return load_overclaim_phrases()
