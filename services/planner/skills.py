"""Diagnosis skills as versioned files (``prompts/skills/*.md``).

A skill names a diagnosis procedure, the triggers that select it (alert names,
English and Chinese keywords) and the evidence-tool steps it runs. Keeping them
as data lets the rules planner and the llm planner share one catalogue, lets a
replay swap a candidate set (``TRACEBOUND_PROMPTS_DIR``), and lets every plan
record the skill version that shaped it. Tool names and parameters are checked
at load time with the tools' own parameter models, so a typo fails at start-up
rather than as a rejected tool call in the middle of a diagnosis.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from services.executor.tools import PARAMS_MODELS
from tracebound.errors import ConfigError
from tracebound.events import PromptRef
from tracebound.prompts import prompts_dir, read_front_matter, resource_name

ToolName = Literal["query_metrics", "query_logs", "lookup_knowledge"]
SERVICE_PLACEHOLDER = "{service}"
SAMPLE_SERVICE = "sample-service"
ALERT_WEIGHT = 10
KEYWORD_WEIGHT = 1
_PLACEHOLDER = re.compile(r"\{[^{}]*\}")
_SPACE = re.compile(r"\s+")


def _squash(text: str) -> str:
    """Case- and whitespace-insensitive form, so "CPU 使用率" matches "cpu使用率"."""
    return _SPACE.sub("", text).casefold()


def _problems(exc: ValidationError, limit: int = 5) -> str:
    """The first few validation errors as ``where: what``."""
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']}"
        for err in exc.errors()[:limit]
    )


class SkillStep(BaseModel):
    """One evidence-tool call of a skill; params may contain ``{service}``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tool: ToolName
    params: dict[str, str | int] = Field(default_factory=dict)
    purpose: str = Field(min_length=1)

    @model_validator(mode="after")
    def _check_params(self) -> SkillStep:
        for key, value in self.params.items():
            if isinstance(value, str):
                extra = [p for p in _PLACEHOLDER.findall(value) if p != SERVICE_PLACEHOLDER]
                if extra:
                    raise ValueError(f"{self.tool}.{key}: only {{service}} may be a placeholder")
        # Both forms the executor may send: with a known service, and without one.
        for service in (SAMPLE_SERVICE, None):
            try:
                PARAMS_MODELS[self.tool].model_validate(self.render_params(service))
            except ValidationError as exc:
                raise ValueError(
                    f"{self.tool} params do not fit the tool: {_problems(exc)}"
                ) from None
        return self

    def render_params(self, service: str | None) -> dict[str, Any]:
        """Params with ``{service}`` filled in.

        Without a known service a param that is only ``{service}`` is dropped,
        and a placeholder inside longer text is removed (``"{service} HikariCP"``
        becomes ``"HikariCP"``) so required params such as ``query`` survive.
        """
        rendered: dict[str, Any] = {}
        for key, value in self.params.items():
            if not isinstance(value, str) or SERVICE_PLACEHOLDER not in value:
                rendered[key] = value
                continue
            if service:
                rendered[key] = value.replace(SERVICE_PLACEHOLDER, service)
                continue
            rest = _SPACE.sub(" ", value.replace(SERVICE_PLACEHOLDER, "")).strip()
            if rest:
                rendered[key] = rest
        return rendered


class Triggers(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    alerts: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()


class Skill(BaseModel):
    """A diagnosis procedure from the catalogue."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    version: str = Field(min_length=1)
    description: str = Field(min_length=1)
    triggers: Triggers = Field(default_factory=Triggers)
    steps: tuple[SkillStep, ...] = Field(min_length=1)
    resource: str = ""
    body: str = ""

    def matches(self, text: str, alert_names: Iterable[str] = ()) -> int:
        """Relevance score; 0 means no trigger hit.

        Each alert trigger named by the request's alerts or mentioned in the text
        weighs ``ALERT_WEIGHT``; each keyword found in the text weighs
        ``KEYWORD_WEIGHT``. Matching ignores case and whitespace, and is plain
        substring search so Chinese keywords work without word boundaries.
        """
        haystack = _squash(text)
        named = {_squash(a) for a in alert_names}
        score = 0
        for alert in self.triggers.alerts:
            key = _squash(alert)
            if key and (key in named or key in haystack):
                score += ALERT_WEIGHT
        for keyword in self.triggers.keywords:
            key = _squash(keyword)
            if key and key in haystack:
                score += KEYWORD_WEIGHT
        return score

    def render_params(self, service: str | None) -> list[tuple[str, dict[str, Any]]]:
        """Every step as ``(tool, params)`` with ``{service}`` resolved."""
        return [(step.tool, step.render_params(service)) for step in self.steps]

    def ref(self) -> PromptRef:
        return PromptRef(name=self.name, version=self.version, resource=self.resource)

    def catalogue_entry(self) -> dict[str, Any]:
        """What a planner prompt shows of the skill (no body, no file path)."""
        return {
            "name": self.name,
            "description": self.description,
            "alerts": list(self.triggers.alerts),
            "keywords": list(self.triggers.keywords),
            "steps": [
                {"tool": s.tool, "params": s.params, "purpose": s.purpose} for s in self.steps
            ],
        }


def parse_skill(path: Path) -> Skill:
    """Load and validate one skill file; ConfigError names the file and the problem."""
    meta, body = read_front_matter(path)
    try:
        skill = Skill.model_validate({**meta, "resource": resource_name(path), "body": body})
    except ValidationError as exc:
        raise ConfigError(f"{path}: invalid skill: {_problems(exc)}") from None
    if skill.name != path.stem:
        raise ConfigError(f"{path}: skill name {skill.name!r} does not match the file name")
    return skill


@cache
def _load(folder: Path) -> tuple[Skill, ...]:
    if not folder.is_dir():
        raise ConfigError(f"skill folder {folder} does not exist")
    paths = sorted(p for p in folder.glob("*.md") if p.stem.lower() != "readme")
    skills = tuple(parse_skill(path) for path in paths)
    if not skills:
        raise ConfigError(f"skill folder {folder} holds no skill files")
    return skills


def load_skills() -> tuple[Skill, ...]:
    """The skill catalogue of the active prompt folder, loaded once per process."""
    return _load(prompts_dir() / "skills")


def select_skill(
    skills: Iterable[Skill], text: str, alert_names: Iterable[str] = ()
) -> tuple[Skill | None, int]:
    """The best-scoring skill (ties: alphabetical name) and its score; None when nothing hits."""
    names = tuple(alert_names)
    scored = sorted(((s.matches(text, names), s) for s in skills), key=lambda p: (-p[0], p[1].name))
    if not scored or scored[0][0] == 0:
        return None, 0
    return scored[0][1], scored[0][0]


def catalogue_text(skills: Iterable[Skill]) -> str:
    """The ``$skills`` value of the planner prompts: one JSON object per line."""
    return "\n".join(json.dumps(s.catalogue_entry(), ensure_ascii=False) for s in skills)


def clear_cache() -> None:
    _load.cache_clear()


__all__ = [
    "Skill",
    "SkillStep",
    "Triggers",
    "catalogue_text",
    "clear_cache",
    "load_skills",
    "parse_skill",
    "select_skill",
]
