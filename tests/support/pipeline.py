"""Running the five role processes against the test stack."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from pathlib import Path

from tests.support.stack import StackHandle
from tracebound.settings import StackSettings
from tracebound.stack.services import start_services, stop_services


@contextlib.contextmanager
def running_pipeline(
    stack: StackHandle, state_dir: Path, env: Mapping[str, str] | None = None
) -> Iterator[StackSettings]:
    """All roles as separate processes (``tracebound up`` wiring), stopped on exit."""
    settings = StackSettings(state_dir=state_dir)
    full_env = {k: v for k, v in stack.env().items() if k.startswith("TRACEBOUND_")}
    full_env.update(env or {})
    start_services(settings, full_env)
    try:
        yield settings
    finally:
        stop_services(settings)
