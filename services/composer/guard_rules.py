"""``rules/answer-guard.json``: the causal, absence and hedge phrases of the answer guard.

Why a file: which words link a cause to an effect, or assert that something is
absent or healthy, is a matter of wording in two languages, reviewed and
versioned like the other rule files rather than buried in code. A malformed
file raises :class:`~tracebound.errors.ConfigError` naming it.
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

GUARD_RULES_PATH = resources.path("rules", "answer-guard.json")


class _Phrases(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    en: tuple[str, ...] = Field(min_length=1)
    zh: tuple[str, ...] = Field(min_length=1)

    @field_validator("en", "zh")
    @classmethod
    def _non_blank(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if any(not item.strip() for item in value):
            raise ValueError("entries must not be blank")
        return value


class GuardRulesFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    version: str = Field(min_length=1)
    description: str = ""
    causal: _Phrases
    absence: _Phrases
    hedges: _Phrases


def _fold(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def phrase_pattern(phrases: _Phrases) -> re.Pattern[str]:
    """English phrases on word boundaries, Chinese ones as substrings; longest first."""
    english = sorted({_fold(p) for p in phrases.en}, key=len, reverse=True)
    chinese = sorted({_fold(p) for p in phrases.zh}, key=len, reverse=True)
    words = "|".join(re.escape(p).replace(r"\ ", r"\s+") for p in english)
    return re.compile(
        rf"(?<![\w'])(?:{words})(?![\w'])|{'|'.join(re.escape(p) for p in chinese)}",
        re.IGNORECASE,
    )


@dataclass(frozen=True, eq=False)
class GuardRules:
    """The validated file and its compiled patterns."""

    version: str
    source: str
    causal: re.Pattern[str]
    absence: re.Pattern[str]
    hedges: re.Pattern[str]


def parse_guard_rules(data: object, source: str = "<answer guard rules>") -> GuardRules:
    try:
        doc = GuardRulesFile.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{source}: invalid answer guard rules: {describe(exc)}") from None
    return GuardRules(
        version=doc.version,
        source=source,
        causal=phrase_pattern(doc.causal),
        absence=phrase_pattern(doc.absence),
        hedges=phrase_pattern(doc.hedges),
    )


def load_guard_rules(path: str | Path | None = None) -> GuardRules:
    """Read and validate a rules file; the default is the repository's own."""
    rules_path = Path(path) if path is not None else GUARD_RULES_PATH
    return parse_guard_rules(read_json(rules_path, "answer guard rules"), str(rules_path))


@cache
def default_guard_rules() -> GuardRules:
    """The repository's rules, loaded once per process."""
    return load_guard_rules()


def template_fragments(texts: Sequence[str]) -> tuple[str, ...]:
    """The literal parts of fixed phrases (placeholders cut out, NFKC), longest first."""
    folded = [unicodedata.normalize("NFKC", t) for t in texts]
    parts = {p.strip() for t in folded for p in re.split(r"\{[a-z_]+\}", t)}
    return tuple(sorted((p for p in parts if len(p) >= 3), key=len, reverse=True))
