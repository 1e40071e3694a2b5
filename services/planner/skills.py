"""Diagnosis skills as versioned files (``prompts/skills/*.md``).

A skill names a diagnosis procedure, the triggers that select it (alert names,
alert labels, English and Chinese keywords) and the evidence-tool steps it runs;
one skill may be the ``fallback``: the generic investigation of an alert no
other skill knows. Which trigger wins is decided in ``routing``. Keeping them
as data lets the rules planner and the llm planner share one catalogue, lets a
replay swap a candidate set (``TRACEBOUND_PROMPTS_DIR``), and lets every plan
record the skill version that shaped it. Tool names and parameters are checked
at load time with the tools' own parameter models, so a typo fails at start-up
rather than as a rejected tool call in the middle of a diagnosis.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from functools import cache, lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from services.executor.tools import PARAMS_MODELS
from tracebound.errors import ConfigError
from tracebound.events import PromptRef
from tracebound.prompts import prompts_dir, read_front_matter, resource_name

ToolName = Literal["query_metrics", "query_logs", "lookup_knowledge", "query_prometheus"]
SERVICE_PLACEHOLDER = "{service}"
ALERT_PLACEHOLDER = "{alert_name}"
WINDOW_PLACEHOLDER = "{alert_window}"
TEXT_PLACEHOLDERS = frozenset({SERVICE_PLACEHOLDER, ALERT_PLACEHOLDER})
WINDOW_PARAM = "window_minutes"
SAMPLE_VALUES: Mapping[str, str | int] = {
    SERVICE_PLACEHOLDER: "sample-service",
    ALERT_PLACEHOLDER: "SampleAlert",
    WINDOW_PLACEHOLDER: 75,
}
_PLACEHOLDER = re.compile(r"\{[^{}]*\}")
_SPACE = re.compile(r"\s+")


@lru_cache(maxsize=4096)  # the triggers of every skill are squashed for every request
def squash(text: str) -> str:
    """Case- and whitespace-insensitive form, so "CPU 使用率" matches "cpu使用率"."""
    return _SPACE.sub("", text).casefold()


def _problems(exc: ValidationError, limit: int = 5) -> str:
    """The first few validation errors as ``where: what``."""
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']}"
        for err in exc.errors()[:limit]
    )


class SkillStep(BaseModel):
    """One evidence-tool call of a skill.

    String params may contain ``{service}`` and ``{alert_name}`` (of the alert
    that chose the skill); ``window_minutes`` may be ``"{alert_window}"``: the
    minutes from shortly before the alert's ``startsAt`` until the request, so a
    log search, which always ends now, reaches back to the alert's start.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    tool: ToolName
    params: dict[str, str | int] = Field(default_factory=dict)
    purpose: str = Field(min_length=1)
    # Placeholders without which the step is left out (e.g. no service: no service logs).
    needs: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _check_params(self) -> SkillStep:
        unknown = set(self.needs) - TEXT_PLACEHOLDERS
        if unknown:
            raise ValueError(f"{self.tool}: needs may only name {sorted(TEXT_PLACEHOLDERS)}")
        for key, value in self.params.items():
            if not isinstance(value, str):
                continue
            found = set(_PLACEHOLDER.findall(value))
            if value == WINDOW_PLACEHOLDER and key == WINDOW_PARAM:
                continue
            if found - TEXT_PLACEHOLDERS:
                raise ValueError(
                    f"{self.tool}.{key}: only {{service}} and {{alert_name}} may be placeholders"
                    f" ({{alert_window}} only as the whole of {WINDOW_PARAM})"
                )
        # Every form the executor may send: all values known, and only those the step needs.
        for values in (SAMPLE_VALUES, {name: SAMPLE_VALUES[name] for name in self.needs}):
            try:
                PARAMS_MODELS[self.tool].model_validate(self.fill(values))
            except ValidationError as exc:
                raise ValueError(
                    f"{self.tool} params do not fit the tool: {_problems(exc)}"
                ) from None
        return self

    def fill(self, values: Mapping[str, str | int | None]) -> dict[str, Any]:
        """Params with their placeholders filled from ``values`` (keyed ``{service}`` …).

        A param that is only an unknown placeholder is dropped, and an unknown
        placeholder inside longer text is removed (``"{service} HikariCP"`` becomes
        ``"HikariCP"``) so required params such as ``query`` survive.
        """
        rendered: dict[str, Any] = {}
        for key, value in self.params.items():
            if not isinstance(value, str) or not _PLACEHOLDER.search(value):
                rendered[key] = value
            elif value == WINDOW_PLACEHOLDER:
                if values.get(WINDOW_PLACEHOLDER):
                    rendered[key] = values[WINDOW_PLACEHOLDER]
            else:
                text = _PLACEHOLDER.sub(lambda m: str(values.get(m.group()) or ""), value)
                rest = _SPACE.sub(" ", text).strip()
                if rest:
                    rendered[key] = rest
        return rendered

    def ready(self, values: Mapping[str, str | int | None]) -> bool:
        """Whether every placeholder the step needs has a value."""
        return all(values.get(name) for name in self.needs)


class Triggers(BaseModel):
    """Alert names, alert labels (``key=value``) and question keywords that select a skill."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    alerts: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _labels_are_pairs(self) -> Triggers:
        for label in self.labels:
            key, sep, value = label.partition("=")
            if not (sep and key.strip() and value.strip()):
                raise ValueError(f"label trigger {label!r} is not key=value")
        return self

    def label_pairs(self) -> tuple[tuple[str, str], ...]:
        return tuple(
            (key.strip(), value.strip())
            for key, _sep, value in (label.partition("=") for label in self.labels)
        )


class Skill(BaseModel):
    """A diagnosis procedure from the catalogue."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    version: str = Field(min_length=1)
    description: str = Field(min_length=1)
    triggers: Triggers = Field(default_factory=Triggers)
    fallback: bool = False
    steps: tuple[SkillStep, ...] = Field(min_length=1)
    resource: str = ""
    body: str = ""

    def knows_alert(self, name: str) -> bool:
        """Whether ``name`` is one of the alert triggers (case and spaces ignored)."""
        key = squash(name)
        return bool(key) and any(squash(a) == key for a in self.triggers.alerts)

    def label_match(self, labels: Mapping[str, str]) -> str | None:
        """The first label trigger (``key=value``) the labels carry, if any."""
        for key, value in self.triggers.label_pairs():
            if labels.get(key, "").casefold() == value.casefold():
                return f"{key}={value}"
        return None

    def calls(
        self, values: Mapping[str, str | int | None]
    ) -> list[tuple[SkillStep, dict[str, Any]]]:
        """Every step that can run with ``values``, and its filled params."""
        return [(step, step.fill(values)) for step in self.steps if step.ready(values)]

    def render_params(self, service: str | None) -> list[tuple[str, dict[str, Any]]]:
        """Every step as ``(tool, params)`` with ``{service}`` resolved."""
        return [(s.tool, params) for s, params in self.calls({SERVICE_PLACEHOLDER: service})]

    def ref(self) -> PromptRef:
        return PromptRef(name=self.name, version=self.version, resource=self.resource)

    def catalogue_entry(self) -> dict[str, Any]:
        """What a planner prompt shows of the skill (no body, no file path)."""
        return {
            "name": self.name,
            "description": self.description,
            "alerts": list(self.triggers.alerts),
            "labels": list(self.triggers.labels),
            "keywords": list(self.triggers.keywords),
            "fallback": self.fallback,
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
    fallbacks = [s.name for s in skills if s.fallback]
    if len(fallbacks) > 1:
        raise ConfigError(f"skill folder {folder}: more than one fallback skill: {fallbacks}")
    return skills


def load_skills(prompts_folder: Path | None = None) -> tuple[Skill, ...]:
    """The skill catalogue of a prompt folder (the active one by default), loaded once."""
    return _load((prompts_folder or prompts_dir()) / "skills")


def catalogue_text(skills: Iterable[Skill]) -> str:
    """The ``$skills`` value of the planner prompts: one JSON object per line."""
    return "\n".join(json.dumps(s.catalogue_entry(), ensure_ascii=False) for s in skills)


def brief_catalogue(skills: Iterable[Skill]) -> str:
    """The catalogue a planner prompt lists: one line per skill, its name and description.

    Alert triggers are named too (they route alert runs); keywords and steps are not.
    """
    lines = []
    for skill in skills:
        line = f"- {skill.name}: {skill.description}"
        if skill.triggers.alerts:
            line += f" (alerts: {', '.join(skill.triggers.alerts)})"
        if skill.fallback:
            line += " (fallback for unknown alerts)"
        lines.append(line)
    return "\n".join(lines)


def steps_text(skill: Skill | None) -> str:
    """The steps of one skill, a line each: tool, parameters, purpose."""
    if skill is None:
        return "none"
    return "\n".join(
        f"- {s.tool} {json.dumps(s.params, ensure_ascii=False)}: {s.purpose}" for s in skill.steps
    )


def clear_cache() -> None:
    _load.cache_clear()


__all__ = [
    "Skill",
    "SkillStep",
    "Triggers",
    "brief_catalogue",
    "catalogue_text",
    "clear_cache",
    "load_skills",
    "parse_skill",
    "squash",
    "steps_text",
]
