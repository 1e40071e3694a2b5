"""Unknown ``TRACEBOUND_*`` environment variables, reported instead of ignored.

Settings classes ignore variables they do not read, so a misspelt knob
(``TRACEBOUND_GATEKEEPER_BATCH_SIZ``) would silently leave its default in force.
The known names come from the settings classes themselves (their prefix and
field names, aliases included) plus the few variables read without a class
(:data:`tracebound.settings.PLAIN_VARIABLES`).

A service process loads only its own settings classes, while the environment is
shared by every process ``tracebound up`` starts; so a service judges only the
variables under the prefixes it reads, and the command line, which loads every
class, judges them all.
"""

from __future__ import annotations

import difflib
import logging
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pydantic import AliasChoices

from tracebound.settings import (
    PLAIN_VARIABLES,
    TraceboundSettings,
    prefix_for,
    services_seen,
    settings_classes,
)

PREFIX = "TRACEBOUND_"
log = logging.getLogger("tracebound.settings")
_reported: set[str] = set()


@dataclass(frozen=True, slots=True)
class UnknownVariable:
    name: str
    suggestion: str | None

    def message(self) -> str:
        hint = f"; did you mean {self.suggestion}?" if self.suggestion else ""
        return f"unknown environment variable {self.name} is ignored{hint}"


def unknown_variables(
    environ: Mapping[str, str], known: Iterable[str], scope: Iterable[str] = (PREFIX,)
) -> list[UnknownVariable]:
    """The variables under one of the ``scope`` prefixes that are not ``known``, sorted.

    Names are compared case-insensitively, as the settings classes read them.
    """
    known_upper = {k.upper() for k in known}
    prefixes = tuple(p.upper() for p in scope)
    unknown = []
    for name in sorted(environ):
        upper = name.upper()
        if upper.startswith(prefixes) and upper not in known_upper:
            close = difflib.get_close_matches(upper, sorted(known_upper), n=1, cutoff=0.75)
            unknown.append(UnknownVariable(name, close[0] if close else None))
    return unknown


def _field_names(cls: type[TraceboundSettings]) -> set[str]:
    """The names a class reads, without its prefix: field names and their aliases."""
    names = set()
    for field_name, field in cls.model_fields.items():
        alias = field.validation_alias
        if isinstance(alias, str):
            names.add(alias)
        elif isinstance(alias, AliasChoices):
            names.update(c for c in alias.choices if isinstance(c, str))
        else:
            names.add(field.alias or field_name)
    return names


def _fixed_prefix(cls: type[TraceboundSettings]) -> str:
    return str(cls.model_config.get("env_prefix") or "")


def known_variables(services: Iterable[str] = ()) -> tuple[set[str], set[str]]:
    """Known names and the prefixes they live under, from the classes defined so far.

    A class without a fixed prefix is read once per service (``TRACEBOUND_<SERVICE>_``)
    for ``services``, the services seen in this process, and every fixed prefix.
    """
    classes = settings_classes()
    prefixes = {_fixed_prefix(c) for c in classes} - {""}
    per_service = {prefix_for(s) for s in {*services, *services_seen()}}
    prefixes |= per_service
    known = set(PLAIN_VARIABLES)
    for cls in classes:
        fixed = _fixed_prefix(cls)
        for prefix in [fixed] if fixed else prefixes:
            known.update(prefix + name for name in _field_names(cls))
    return {k.upper() for k in known}, prefixes


def report_unknown_variables(
    service: str | None = None, environ: Mapping[str, str] | None = None
) -> list[UnknownVariable]:
    """Log a warning, once per process, for each unknown variable; return them all.

    With ``service``, judge only the prefixes this process reads (its own and those
    of its loaded classes); without, every ``TRACEBOUND_*`` variable.
    """
    known, prefixes = known_variables([service] if service else [])
    scope = prefixes if service else {PREFIX}
    unknown = unknown_variables(os.environ if environ is None else environ, known, scope)
    for item in unknown:
        if item.name not in _reported:
            _reported.add(item.name)
            log.warning("%s", item.message())
    return unknown
