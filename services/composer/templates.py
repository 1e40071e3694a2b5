"""The composer's fixed phrases: ``rules/composer-templates.json``, Chinese and English.

Why a file: wording is reviewed like rules, and a translation can change
without touching code. Why validated: a template with a digit could put a
number into an answer that no claim supports, and a negative template without
``{subject}`` could no longer say *what* was not found, so either is a
:class:`~tracebound.errors.ConfigError` naming the file.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from tracebound import resources
from tracebound.errors import ConfigError

TEMPLATES_PATH = resources.path("rules", "composer-templates.json")

Language = Literal["zh", "en"]
# The placeholders each alert phrase of an answer's opening lines must carry.
_ALERT_FIELDS = {
    "alert_subject": ("name", "service"),
    "alert_line": ("subject", "details"),
    "alert_value": ("value",),
    "alert_threshold": ("threshold",),
    "alert_since": ("since",),
}


class Phrases(BaseModel):
    """Every phrase one language needs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pass_intro: str
    negative: str
    negative_subject_fallback: str
    more_findings: str
    hypotheses_header: str
    hypotheses_withheld: str
    actions_header: str
    action_reason: str
    low_intro: str
    low_supported_header: str
    low_none_supported: str
    low_missing_header: str
    low_missing_fallback: str
    low_summary: str
    reject_intro: str
    reject_summary: str
    no_claims_summary: str
    demo_note: str
    bullet: str
    alerts_header: str
    alerts_more: str
    alert_unnamed: str
    alert_subject: str
    alert_line: str
    alert_separator: str
    alert_value: str
    alert_threshold: str
    alert_since: str

    @model_validator(mode="after")
    def _safe(self) -> Phrases:
        for name, value in self.model_dump().items():
            if re.search(r"[0-9]", value):
                raise ValueError(f"{name} carries a digit; numbers may only come from claims")
        if "{subject}" not in self.negative:
            raise ValueError("negative must contain {subject}")
        if "{first}" not in self.more_findings:
            raise ValueError("more_findings must contain {first}")
        for name, fields in _ALERT_FIELDS.items():
            if not all(f"{{{field}}}" in getattr(self, name) for field in fields):
                raise ValueError(f"{name} must contain {', '.join(fields)}")
        return self


class TemplatesFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    version: str = Field(min_length=1)
    description: str = ""
    languages: dict[Language, Phrases]

    @model_validator(mode="after")
    def _both(self) -> TemplatesFile:
        missing = {"zh", "en"} - self.languages.keys()
        if missing:
            raise ValueError(f"missing languages: {', '.join(sorted(missing))}")
        return self


def parse_templates(data: object, source: str = "<composer templates>") -> TemplatesFile:
    try:
        return TemplatesFile.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()
        )
        raise ConfigError(f"{source}: invalid composer templates: {problems}") from None


def load_templates(path: str | Path | None = None) -> TemplatesFile:
    file = Path(path) if path is not None else TEMPLATES_PATH
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ConfigError(f"{file}: cannot read composer templates: {reason}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{file}: composer templates are not UTF-8 JSON: {exc}") from None
    return parse_templates(data, str(file))


@cache
def default_templates() -> TemplatesFile:
    """The repository's templates, loaded once per process."""
    return load_templates()


def language_of(language: str) -> Language:
    """``zh``, ``zh-CN``, ``zh_Hans`` … are Chinese; everything else is English."""
    return "zh" if language.strip().casefold().startswith("zh") else "en"


def phrases(language: str, templates: TemplatesFile | None = None) -> Phrases:
    doc = templates if templates is not None else default_templates()
    return doc.languages[language_of(language)]
