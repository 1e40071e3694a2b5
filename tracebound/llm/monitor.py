"""Counting and logging the llm→rules fallbacks of one process.

A role whose endpoint is gone falls back on every run. One warning per run
would bury the cause under hundreds of identical lines, and no line at all
would let a deployment answer 100 % from rules while looking healthy. So the
monitor logs a cause once — the first time a role falls back for it, again
when the cause changes, and once when the model answers again — and counts
every decision for ``/metrics``, where the fallback rate is plain to see:

- ``tracebound_llm_fallbacks_total{role, kind}``: runs a role answered from
  rules because its model failed, by error kind;
- ``tracebound_llm_decisions_total{role, mode}``: runs a role was asked to
  decide with its model, by outcome (``llm`` or ``rules-fallback``).

A batch that is rewound and processed again decides again, and counts again.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

from tracebound.events import ModelFallback

log = logging.getLogger("tracebound.llm.fallback")


class FallbackMonitor(Collector):
    """Per-process fallback counts (a Prometheus collector) and the once-per-cause log."""

    def __init__(self, logger: logging.Logger = log) -> None:
        self._log = logger
        self._lock = threading.Lock()
        self._fallbacks: Counter[tuple[str, str]] = Counter()
        self._decisions: Counter[tuple[str, str]] = Counter()
        self._cause: dict[str, str] = {}  # role -> kind of its current fallback streak
        self._streak: Counter[str] = Counter()  # role -> fallbacks since the cause began

    def fell_back(self, fallback: ModelFallback, *, run_id: str | None = None) -> None:
        """Count one fallback; log it when its role was healthy or failing for another cause."""
        role, kind = fallback.role, fallback.kind
        with self._lock:
            self._fallbacks[(role, kind)] += 1
            self._decisions[(role, "rules-fallback")] += 1
            known = self._cause.get(role)
            self._cause[role] = kind
            self._streak[role] = 1 if known != kind else self._streak[role] + 1
        if known != kind:
            self._log.warning(
                "%s; answering from rules until the model answers again "
                "(counted in tracebound_llm_fallbacks_total, not logged per run)",
                fallback.describe(),
                extra={"run_id": run_id, "role": role, "kind": kind},
            )

    def answered(self, role: str) -> None:
        """Count one model decision; log the recovery when the role was falling back."""
        with self._lock:
            self._decisions[(role, "llm")] += 1
            kind = self._cause.pop(role, None)
            streak = self._streak.pop(role, 0)
        if kind is not None:
            self._log.info(
                "%s: the model answers again after %d rules fallback(s) because of %s",
                role,
                streak,
                kind,
                extra={"role": role, "kind": kind},
            )

    def fallbacks(self) -> dict[tuple[str, str], int]:
        """Fallbacks so far by (role, kind)."""
        with self._lock:
            return dict(self._fallbacks)

    def decisions(self) -> dict[tuple[str, str], int]:
        """Model decisions so far by (role, mode)."""
        with self._lock:
            return dict(self._decisions)

    def collect(self) -> Iterator[CounterMetricFamily]:
        yield _family(
            "tracebound_llm_fallbacks",
            "Runs a role answered from its rules because its model failed",
            ["role", "kind"],
            self.fallbacks(),
        )
        yield _family(
            "tracebound_llm_decisions",
            "Runs a role was asked to decide with its model, by outcome",
            ["role", "mode"],
            self.decisions(),
        )


def _family(
    name: str, doc: str, labels: list[str], counts: dict[tuple[str, str], int]
) -> CounterMetricFamily:
    family = CounterMetricFamily(name, doc, labels=labels)
    for values, count in sorted(counts.items()):
        family.add_metric(list(values), count)
    return family


__all__ = ["FallbackMonitor"]
