"""When the loop commits its open transaction: by size, by time, or when input runs dry.

One transaction per poll makes a busy role pay a transaction (begin, offsets,
markers on every partition written) for every few messages it reads, and a
transaction begun right after the previous commit often waits for that
commit's markers. So, like Kafka Streams' ``commit.interval.ms`` under
exactly-once, the loop keeps one transaction open across polls and commits it
when it holds ``commit_max_messages`` inputs or has been open
``commit_interval_ms``. Unlike a fixed interval, it also commits as soon as a
poll finds nothing more waiting: a lightly loaded role never holds an answer
back for the interval, so the interval costs latency only under load, where it
buys throughput. ``commit_interval_ms = 0`` commits after every poll.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tracebound.errors import ConfigError
from tracebound.runtime.batch import Output
from tracebound.settings import RuntimeSettings, prefix_for


@dataclass(frozen=True, slots=True)
class CommitPolicy:
    """Commit after ``max_messages`` inputs or ``interval_s`` seconds, whichever is first."""

    interval_s: float
    max_messages: int

    @classmethod
    def of(cls, service: str, runtime: RuntimeSettings) -> CommitPolicy:
        """The policy of ``service``; raises :class:`ConfigError` when the settings disagree."""
        if runtime.commit_interval_ms * 2 > runtime.transaction_timeout_ms:
            prefix = prefix_for(service)
            raise ConfigError(
                f"{service}: {prefix}COMMIT_INTERVAL_MS={runtime.commit_interval_ms} leaves"
                f" too little of {prefix}TRANSACTION_TIMEOUT_MS={runtime.transaction_timeout_ms}"
                " for the commit itself; keep the interval at most half the timeout"
            )
        return cls(runtime.commit_interval_ms / 1000, max(runtime.commit_max_messages, 1))

    def due(self, pending: int, opened_at: float, now: float, more_waiting: bool) -> bool:
        """Whether ``pending`` inputs held since ``opened_at`` are to be committed ``now``."""
        if pending == 0:
            return False
        if not more_waiting:
            return True
        return pending >= self.max_messages or now - opened_at >= self.interval_s


@dataclass
class Uncommitted:
    """What was handled since the last commit: inputs, encoded outputs, dead letters."""

    inputs: list[Any] = field(default_factory=list)
    outputs: list[Output] = field(default_factory=list)
    dead: list[str] = field(default_factory=list)
    opened_at: float = 0.0

    def add(
        self, inputs: Sequence[Any], outputs: list[Output], dead: list[str], now: float
    ) -> None:
        if not self.inputs:
            self.opened_at = now
        self.inputs.extend(inputs)
        self.outputs.extend(outputs)
        self.dead.extend(dead)


__all__ = ["CommitPolicy", "Uncommitted"]
