"""What each service was started with, so ``up`` can tell whose settings changed.

A service reads its environment once (settings are frozen), so a changed
``TRACEBOUND_*`` variable takes effect only when the process restarts. ``up``
records, per started role, the variables that role reads (``<state>/services/
<role>.env.json``, mode 0600) and compares them with the current environment on
the next ``up``. Only the variables under the prefixes a role reads are compared,
so changing the executor's metrics backend restarts the executor and nothing else.

Secret values (passwords, tokens, API keys, DSNs, URLs carrying credentials) are
kept only as a salted SHA-256: enough to notice a change, never the value. A
URL among them is also kept without its credentials, for ``status`` to show.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from pydantic_settings import BaseSettings

from tracebound.settings import prefix_for
from tracebound.topology import MODEL_ROLES

RECORD_FORMAT = 1
HASHED = "sha256:"
# Every role reads the connection settings of the broker and the database.
COMMON_PREFIXES: tuple[str, ...] = ("TRACEBOUND_KAFKA_", "TRACEBOUND_PG_")
# The fixed prefixes each role reads besides its own ``TRACEBOUND_<ROLE>_`` and the
# common ones. A test holds this table to the settings classes each role defines.
ROLE_PREFIXES: dict[str, tuple[str, ...]] = {
    # the trace page links a run's trace with TRACEBOUND_TRACE_URL_TEMPLATE
    "ingest": ("TRACEBOUND_TRACE_",),
    "planner": ("TRACEBOUND_LLM_",),
    # the executor's repair check judges with the gatekeeper's rules file
    "executor": ("TRACEBOUND_LLM_", "TRACEBOUND_TOOLS_", "TRACEBOUND_GATEKEEPER_RULES_"),
    "gatekeeper": ("TRACEBOUND_GATEKEEPER_RULES_",),
    "verifier": ("TRACEBOUND_LLM_",),
    "composer": ("TRACEBOUND_LLM_",),
    # its deadline is checked against the llm-mode roles' model budget
    "sentinel": ("TRACEBOUND_LLM_", "TRACEBOUND_EXECUTOR_"),
    "projections": (),
}
# Roles that choose between their rules and llm implementations (``<ROLE>_MODE``).
MODE_ROLES = frozenset(MODEL_ROLES)
DEFAULT_MODE = "rules"
# Parts of a variable name that mark its value as a secret.
SECRET_WORDS: tuple[str, ...] = (
    "PASSWORD",
    "TOKEN",
    "SECRET",
    "API_KEY",
    "APIKEY",
    "AUTH",
    "CREDENTIAL",
    "DSN",
)
MAX_VALUE_CHARS = 4096


def role_prefixes(role: str) -> tuple[str, ...]:
    """Every ``TRACEBOUND_*`` prefix ``role`` reads its settings from."""
    return (*COMMON_PREFIXES, *ROLE_PREFIXES.get(role, ()), prefix_for(role))


def relevant_env(role: str, environ: Mapping[str, str]) -> dict[str, str]:
    """The variables of ``environ`` that ``role`` reads, by upper-case name (as read)."""
    prefixes = role_prefixes(role)
    return {
        name.upper(): value
        for name, value in sorted(environ.items())
        if name.upper().startswith(prefixes)
    }


def without_credentials(url: str) -> str | None:
    """``url`` with any password removed (the user name stays); None if not a URL."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
        port = parts.port
    except ValueError:
        return None
    if not parts.scheme or host is None:
        return None
    netloc = host if ":" not in host else f"[{host}]"
    if port is not None:
        netloc = f"{netloc}:{port}"
    if parts.username:
        netloc = f"{parts.username}@{netloc}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def is_secret(name: str, value: str) -> bool:
    """A secret by its name, or a URL that carries a password or a query (tokens)."""
    if any(word in name for word in SECRET_WORDS):
        return True
    try:
        parts = urlsplit(value)
        return bool(parts.scheme and (parts.password or parts.query))
    except ValueError:
        return False


def _stored(salt: str, name: str, value: str) -> str:
    """What the record keeps of a value: a salted hash for a secret, else the value."""
    if is_secret(name, value):
        return HASHED + hashlib.sha256(f"{salt}\0{value}".encode()).hexdigest()
    return value[:MAX_VALUE_CHARS]


@dataclass(frozen=True, slots=True)
class EnvRecord:
    """The settings a service process was started with."""

    role: str
    pid: int
    salt: str
    env: dict[str, str]  # name -> clear value, or a salted hash for a secret
    shown: dict[str, str] = field(default_factory=dict)  # a hashed URL without credentials

    @classmethod
    def of(cls, role: str, pid: int, environ: Mapping[str, str]) -> EnvRecord:
        salt = secrets.token_hex(16)
        read = relevant_env(role, environ)
        env = {name: _stored(salt, name, value) for name, value in read.items()}
        shown = {
            name: safe
            for name, value in read.items()
            if env[name].startswith(HASHED) and (safe := without_credentials(value))
        }
        return cls(role, pid, salt, env, shown)

    def changes(self, environ: Mapping[str, str]) -> list[str]:
        """``NAME changed|set|unset`` for every read variable that differs, sorted."""
        now = {
            name: _stored(self.salt, name, value)
            for name, value in relevant_env(self.role, environ).items()
        }
        found = []
        for name in sorted({*self.env, *now}):
            if name not in self.env:
                found.append(f"{name} set")
            elif name not in now:
                found.append(f"{name} unset")
            elif self.env[name] != now[name]:
                found.append(f"{name} changed")
        return found

    def shows(self, name: str) -> str | None:
        """What ``status`` may print for ``name``: never a secret's value."""
        value = self.env.get(name)
        if value is None:
            return None
        if value.startswith(HASHED):
            return self.shown.get(name, "(secret)")
        return without_credentials(value) or value

    def mode(self) -> str | None:
        """``rules`` or ``llm`` for a role that has both; None for one that has not."""
        if self.role not in MODE_ROLES:
            return None
        return self.env.get(f"{prefix_for(self.role)}MODE", DEFAULT_MODE).lower()

    def backends(self, classes: Iterable[type[BaseSettings]]) -> dict[str, str]:
        """The role's ``*_backend`` settings (``metrics``: ``prometheus``) and ``*_url``s.

        Read from the record, falling back to each field's default in ``classes``
        (the settings classes of the process asking): a backend not set in the
        environment runs on its default. URLs come without credentials.
        """
        prefixes = role_prefixes(self.role)
        found: dict[str, str] = {}
        for cls in classes:
            prefix = str(cls.model_config.get("env_prefix") or "").upper()
            if not prefix or prefix not in prefixes:
                continue
            for name, info in cls.model_fields.items():
                upper = name.upper()
                if upper.endswith("_BACKEND"):
                    default = info.default if isinstance(info.default, str) else "none"
                    found[name.removesuffix("_backend")] = self.shows(prefix + upper) or default
                elif upper.endswith("_URL") and (url := self.shows(prefix + upper)):
                    found[name] = url
        return found

    def to_json(self) -> dict[str, Any]:
        return {
            "format": RECORD_FORMAT,
            "role": self.role,
            "pid": self.pid,
            "salt": self.salt,
            "env": self.env,
            "shown": self.shown,
        }


def record_path(folder: Path, role: str) -> Path:
    return folder / f"{role}.env.json"


def write_record(folder: Path, record: EnvRecord, unit: str | None = None) -> None:
    """Write the record atomically, readable by its owner only.

    ``unit`` names a replica's record (``executor-2``); the role's first one by default."""
    path = record_path(folder, unit or record.role)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(record.to_json(), out, sort_keys=True)
    os.chmod(tmp, 0o600)
    tmp.replace(path)


def read_record(folder: Path, role: str, pid: int, unit: str | None = None) -> EnvRecord | None:
    """The record of the process ``pid`` of ``role``; None if missing, unreadable or stale.

    A record naming another pid belongs to an earlier process: what the running one
    was started with is then unknown.
    """
    try:
        raw = json.loads(record_path(folder, unit or role).read_text(encoding="utf-8"))
        if raw.get("format") != RECORD_FORMAT or raw.get("pid") != pid:
            return None
        env = {str(k): str(v) for k, v in dict(raw["env"]).items()}
        shown = {str(k): str(v) for k, v in dict(raw.get("shown") or {}).items()}
        return EnvRecord(role, pid, str(raw["salt"]), env, shown)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def remove_record(folder: Path, role: str) -> None:
    record_path(folder, role).unlink(missing_ok=True)
