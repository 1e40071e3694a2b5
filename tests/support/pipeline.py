"""Running the five role processes against the test stack."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from tests.support.kafka_io import Collector
from tests.support.stack import StackHandle
from tracebound.client import AnswerReader, publish
from tracebound.events import Answer, Event
from tracebound.settings import StackSettings
from tracebound.stack.services import start_services, stop_services
from tracebound.topology import PIPELINE_ROLES

# The tool backends of a fresh install, stated so no inherited setting leaks in.
INSTALL_DEFAULTS = {
    "TRACEBOUND_TOOLS_METRICS_BACKEND": "request",
    "TRACEBOUND_TOOLS_LOGS_BACKEND": "none",
}
ROLES = PIPELINE_ROLES


@contextlib.contextmanager
def running_pipeline(
    stack: StackHandle,
    state_dir: Path,
    env: Mapping[str, str] | None = None,
    roles: tuple[str, ...] = ROLES,
    *,
    demo: bool = True,
) -> Iterator[StackSettings]:
    """The five roles (or ``roles``) as separate processes, as ``tracebound up`` runs them.

    The evidence tools answer from the demo environment unless ``demo`` is false;
    then they run with the defaults of a fresh install (the request's own alerts,
    no logs backend).
    """
    settings = StackSettings(state_dir=state_dir)
    full_env = {k: v for k, v in stack.env().items() if k.startswith("TRACEBOUND_")}
    if not demo:
        full_env.update(INSTALL_DEFAULTS)
    full_env.update(env or {})
    start_services(settings, full_env, roles)
    try:
        yield settings
    finally:
        stop_services(settings, roles)


def answered(
    stack: StackHandle, state_dir: Path, asked: Sequence[Event], *watched: str
) -> tuple[dict[str, Answer], dict[str, list[Event]]]:
    """Publish ``asked`` to a running pipeline; their answers and the events of ``watched``."""
    collectors = {topic: Collector(stack.kafka, topic) for topic in watched}
    reader = AnswerReader(stack.kafka)
    try:
        with running_pipeline(stack, state_dir):
            publish(stack.kafka, list(asked))
            answers = reader.wait_for({e.run_id for e in asked}, timeout_s=180)
            time.sleep(2)  # the watched topics' last events of these runs
    finally:
        reader.close()
        for collector in collectors.values():
            collector.close()
    assert set(answers) == {e.run_id for e in asked}
    return answers, {topic: c.events for topic, c in collectors.items()}
