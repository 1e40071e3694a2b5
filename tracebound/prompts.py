"""Role prompts as versioned files (``prompts/*.md``) and the audit snapshot naming them.

A prompt is data, not code: changing one is a new file version, and every event
records which versions produced it (``prompt_audit``) so a replay can compare
``chat-executor-v1`` with a candidate. Each file starts with TOML front matter
between ``+++`` lines (``name``, ``version``, ``description``, ``variables``)
followed by a :class:`string.Template` body (``$query``; a literal dollar is
``$$``). The declared ``variables`` must be exactly the template's placeholders,
so a renamed placeholder fails at load time instead of at the first model call.

``TRACEBOUND_PROMPTS_DIR`` points a service at another folder; a replay trying a
candidate prompt set hands the roles a :class:`PromptSet` of that folder instead,
so nothing process-wide changes under it.
"""

from __future__ import annotations

import json
import os
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from string import Template
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel

from tracebound import resources
from tracebound.errors import ConfigError
from tracebound.events import PromptAudit, PromptRef

if TYPE_CHECKING:
    from collections.abc import Iterable


PROMPTS_DIR = resources.path("prompts")
PROMPTS_ENV = "TRACEBOUND_PROMPTS_DIR"
AUDIT_VERSION = "chat-prompts-v1"
FENCE = "+++"


def prompts_dir() -> Path:
    """The active prompt folder: ``$TRACEBOUND_PROMPTS_DIR`` or the repository's ``prompts/``."""
    override = os.environ.get(PROMPTS_ENV)
    return Path(override).expanduser().resolve() if override else PROMPTS_DIR


def resource_name(path: Path) -> str:
    """Where a prompt came from, as the audit records it: repo-relative when possible."""
    try:
        return path.resolve().relative_to(resources.ROOT).as_posix()
    except ValueError:
        return path.resolve().as_posix()


def read_front_matter(path: Path) -> tuple[dict[str, Any], str]:
    """Split a ``+++`` TOML front matter from the body; ConfigError names the file."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: unreadable ({type(exc).__name__})") from exc
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != FENCE:
        raise ConfigError(f"{path}: missing '+++' TOML front matter on the first line")
    for index in range(1, len(lines)):
        if lines[index].strip() == FENCE:
            head, body = "".join(lines[1:index]), "".join(lines[index + 1 :])
            break
    else:
        raise ConfigError(f"{path}: front matter is not closed by a '+++' line")
    try:
        meta = tomllib.loads(head)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML front matter: {exc}") from exc
    return meta, body.lstrip("\n")


def _require_str(meta: dict[str, Any], key: str, path: Path) -> str:
    value = meta.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{path}: front matter needs a non-empty string '{key}'")
    return value


def _text(value: object) -> str:
    """Template text of a value: structured data as readable JSON, models via their dump."""
    if isinstance(value, BaseModel):
        return value.model_dump_json(indent=2)
    if isinstance(value, (dict, list, tuple)) or value is None:
        return json.dumps(value, ensure_ascii=False, indent=2, default=str)
    return str(value)


@dataclass(frozen=True, slots=True)
class Prompt:
    """One role prompt: identity for the audit, and the template to render."""

    name: str
    version: str
    resource: str
    template: Template
    description: str = ""
    variables: tuple[str, ...] = ()

    def render(self, **values: object) -> str:
        """The prompt text with every placeholder filled; a missing one is a ConfigError.

        Strings go in as they are; dicts, lists, ``None`` and pydantic models go in
        as JSON, so callers pass the contract objects themselves.
        """
        missing = [v for v in self.variables if v not in values]
        if missing:
            raise ConfigError(
                f"prompt {self.name} ({self.version}) needs value(s) for: {', '.join(missing)}"
            )
        try:
            return self.template.substitute({k: _text(v) for k, v in values.items()})
        except (KeyError, ValueError) as exc:  # defensive: load() validated the template
            raise ConfigError(f"prompt {self.name} ({self.version}) cannot render: {exc}") from exc

    def ref(self) -> PromptRef:
        return PromptRef(name=self.name, version=self.version, resource=self.resource)


def _prompt_file(name: str, folder: Path) -> Path:
    stem = name.removesuffix(".md").replace("_", "-")
    return folder / f"{stem}.md"


def parse_prompt(path: Path) -> Prompt:
    """Load and validate one prompt file (no caching)."""
    meta, body = read_front_matter(path)
    name = _require_str(meta, "name", path)
    version = _require_str(meta, "version", path)
    if name.replace("_", "-") != path.stem:
        raise ConfigError(f"{path}: front matter name {name!r} does not match the file name")
    declared = meta.get("variables", [])
    if not isinstance(declared, list) or not all(isinstance(v, str) for v in declared):
        raise ConfigError(f"{path}: 'variables' must be a list of strings")
    template = Template(body)
    if not template.is_valid():
        raise ConfigError(f"{path}: invalid placeholder in the template (write '$$' for '$')")
    used = set(template.get_identifiers())
    if used != set(declared):
        raise ConfigError(
            f"{path}: template placeholders {sorted(used)} differ from declared "
            f"variables {sorted(declared)}"
        )
    return Prompt(
        name=name,
        version=version,
        resource=resource_name(path),
        template=template,
        description=str(meta.get("description", "")),
        variables=tuple(declared),
    )


@cache
def _load(path: Path) -> Prompt:
    if not path.is_file():
        raise ConfigError(f"prompt {path.stem!r} not found: {path} does not exist")
    return parse_prompt(path)


@dataclass(frozen=True, slots=True)
class PromptSet:
    """The folder of prompts a role reads: the active one, or a candidate given to it."""

    folder: Path

    @classmethod
    def active(cls) -> PromptSet:
        return cls(prompts_dir())

    def get(self, name: str) -> Prompt:
        """The prompt ``name`` (``chat-executor`` or ``chat_executor``), loaded once per process."""
        return _load(_prompt_file(name, self.folder))

    def all(self) -> tuple[Prompt, ...]:
        """Every prompt file of the folder, sorted by file name."""
        paths = sorted(p for p in self.folder.glob("*.md") if p.stem.lower() != "readme")
        return tuple(_load(path) for path in paths)


def load_prompt(name: str) -> Prompt:
    """The prompt ``name`` of the active folder."""
    return PromptSet.active().get(name)


def load_prompts() -> tuple[Prompt, ...]:
    """Every prompt file of the active folder, sorted by file name."""
    return PromptSet.active().all()


class Referenced(Protocol):
    """Anything the audit can name: a prompt, or a skill of the planner's catalogue."""

    def ref(self) -> PromptRef: ...


def prompt_audit(
    prompts: Iterable[Prompt], skills: Iterable[Referenced | PromptRef] = ()
) -> PromptAudit:
    """The compact ``prompt_audit`` snapshot: names, versions and resources, never text.

    A skill may come as the reference a recorded plan carries instead of a file.
    """
    refs = [prompt.ref() for prompt in prompts]
    refs += [skill if isinstance(skill, PromptRef) else skill.ref() for skill in skills]
    return PromptAudit(version=AUDIT_VERSION, prompts=tuple(refs))


def clear_cache() -> None:
    """Forget loaded prompts (tests and long-lived replays that switch folders)."""
    _load.cache_clear()


__all__ = [
    "AUDIT_VERSION",
    "PROMPTS_DIR",
    "PROMPTS_ENV",
    "Prompt",
    "PromptSet",
    "clear_cache",
    "load_prompt",
    "load_prompts",
    "parse_prompt",
    "prompt_audit",
    "prompts_dir",
    "read_front_matter",
    "resource_name",
]
