"""Running the five role processes against the test stack."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from pathlib import Path

from tests.support.stack import StackHandle
from tracebound.settings import StackSettings
from tracebound.stack.services import start_services, stop_services

ROLES = ("planner", "executor", "gatekeeper", "verifier", "composer")


@contextlib.contextmanager
def running_pipeline(
    stack: StackHandle,
    state_dir: Path,
    env: Mapping[str, str] | None = None,
    roles: tuple[str, ...] = ROLES,
) -> Iterator[StackSettings]:
    """The five roles (or ``roles``) as separate processes, as ``tracebound up`` runs them."""
    settings = StackSettings(state_dir=state_dir)
    full_env = {k: v for k, v in stack.env().items() if k.startswith("TRACEBOUND_")}
    full_env.update(env or {})
    start_services(settings, full_env, roles)
    try:
        yield settings
    finally:
        stop_services(settings, roles)
