"""How many runs a role keeps in flight, how big its batches are, how long it may not poll.

A role that waits on a model spends seconds per handler call, so one call at a
time in batches of hundreds would keep a batch open for many minutes: longer
than librdkafka's ``max.poll.interval.ms`` (the member is then thrown out of its
group and the batch is done again by another one) and longer than the
sentinel's deadline (the run is answered as failed while it is still being
worked on). So a role with a model runs its handler calls concurrently
(``TRACEBOUND_<ROLE>_CONCURRENCY``), takes batches of at most a
few calls per worker (so a commit waits for a short tail only), and derives its
poll interval from the worst time such a batch may take. A poll interval set
explicitly (``TRACEBOUND_<ROLE>_MAX_POLL_INTERVAL_MS`` or ``max.poll.interval.ms``
in ``TRACEBOUND_KAFKA_EXTRA``) that is shorter than that is refused at start,
naming the settings that disagree. A role without a model keeps today's pace:
one call at a time in batches of ``TRACEBOUND_<ROLE>_BATCH_SIZE``.

The default concurrency is 32 runs per model call a typical input makes: a run
holds one model call at a time, so a role whose runs ask the model twice (the
executor: a tool turn, then its answer) needs twice the runs in flight to keep
pace with the roles before and after it; otherwise it alone sets the pipeline's
rate. One replica of each role then has 160 calls in flight at most, which a
server that batches requests (vLLM schedules up to 256 sequences at once by
default) serves together; a server that runs fewer at once queues the rest, and
those waits count against the model timeout, so set the concurrency to what it
serves.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from tracebound.errors import ConfigError
from tracebound.settings import RuntimeSettings, prefix_for

# Runs in flight per model call of a typical input (see the module docstring).
LLM_CONCURRENCY = 32
# A batch holds at most this many calls per worker: enough to keep every worker
# busy while the slowest call of the wave finishes, few enough that the commit
# never waits on more than one more wave.
CALLS_PER_WORKER = 2
# Room on top of the model time for what a batch does besides waiting on the
# model (decoding, tools' bookkeeping, the commit itself).
POLL_SLACK_S = 60.0
LIBRDKAFKA_MAX_POLL_MS = 300_000
POLL_PROPERTY = "max.poll.interval.ms"


@dataclass(frozen=True, slots=True)
class ModelBudget:
    """The longest one handler call may wait on a model, and the settings that make it.

    ``typical_calls`` is how many model calls an input usually makes (not the
    worst case): it sets the role's default concurrency.
    """

    seconds: float
    settings: tuple[str, ...]
    typical_calls: int = 1


@dataclass(frozen=True, slots=True)
class Pacing:
    """The effective concurrency, batch size and poll interval of one role process."""

    concurrency: int
    batch_size: int
    max_poll_interval_ms: int
    budget: ModelBudget | None  # None: the role calls no model

    @property
    def waves(self) -> int:
        """How many rounds of ``concurrency`` calls a full batch needs."""
        return math.ceil(self.batch_size / self.concurrency)

    @property
    def batch_budget_s(self) -> float:
        """The longest a full batch may take waiting on the model (0 without a model)."""
        return self.waves * self.budget.seconds if self.budget else 0.0

    def consumer_config(self) -> dict[str, str]:
        return {POLL_PROPERTY: str(self.max_poll_interval_ms)}

    def summary(self, commit_every_s: float, commit_inputs: int) -> str:
        """How the process paces itself, with its commit policy, as its start is logged."""
        return (
            f"{self.concurrency} in flight, batches of up to {self.batch_size},"
            f" max.poll.interval.ms {self.max_poll_interval_ms},"
            f" commits every {commit_every_s * 1000:g} ms or {commit_inputs} inputs"
        )


def pace(
    service: str,
    runtime: RuntimeSettings,
    budget: ModelBudget | None,
    consumer_config: Mapping[str, str] | None = None,
) -> Pacing:
    """The pacing of ``service``; raises :class:`ConfigError` when the settings disagree.

    ``budget`` is the role's model time for one input (model calls × attempts ×
    per-attempt timeout); ``consumer_config`` holds the librdkafka properties the
    consumer gets from elsewhere, which may set the poll interval too.
    """
    has_model = budget is not None
    run_budget_s = budget.seconds if budget else 0.0
    concurrency = in_flight(runtime, budget)
    batch_size = runtime.batch_size
    if has_model:
        batch_size = min(batch_size, concurrency * CALLS_PER_WORKER)
    waves = math.ceil(batch_size / concurrency)
    needed_ms = math.ceil((waves * run_budget_s + POLL_SLACK_S) * 1000)
    explicit = _explicit_poll_ms(service, runtime, consumer_config or {})
    if explicit is not None:
        setting, poll_ms = explicit
        if budget is not None and poll_ms < needed_ms:
            raise ConfigError(_inconsistent(service, setting, poll_ms, needed_ms, budget))
    else:
        poll_ms = max(LIBRDKAFKA_MAX_POLL_MS, needed_ms)
    return Pacing(concurrency, batch_size, poll_ms, budget)


def in_flight(runtime: RuntimeSettings, budget: ModelBudget | None) -> int:
    """Handler calls a role runs at once: the setting, else its default for ``budget``."""
    if runtime.concurrency is not None:
        return runtime.concurrency
    return LLM_CONCURRENCY * budget.typical_calls if budget is not None else 1


def _explicit_poll_ms(
    service: str, runtime: RuntimeSettings, consumer_config: Mapping[str, str]
) -> tuple[str, int] | None:
    if runtime.max_poll_interval_ms is not None:
        return f"{prefix_for(service)}MAX_POLL_INTERVAL_MS", runtime.max_poll_interval_ms
    raw = consumer_config.get(POLL_PROPERTY)
    if raw is None:
        return None
    try:
        return f"{POLL_PROPERTY} (TRACEBOUND_KAFKA_EXTRA)", int(raw)
    except ValueError as exc:
        raise ConfigError(f"{POLL_PROPERTY} must be a number of milliseconds, not {raw!r}") from exc


def _inconsistent(
    service: str, setting: str, poll_ms: int, needed_ms: int, budget: ModelBudget
) -> str:
    prefix = prefix_for(service)
    return (
        f"{service}: {setting}={poll_ms} is shorter than a batch may take waiting on the model"
        f" ({needed_ms} ms: {budget.seconds:g}s per input from {', '.join(budget.settings)},"
        f" times the waves of {prefix}BATCH_SIZE over {prefix}CONCURRENCY, plus"
        f" {POLL_SLACK_S:g}s); raise it, or lower the model time, or the batch size,"
        " or raise the concurrency"
    )


__all__ = ["LLM_CONCURRENCY", "ModelBudget", "Pacing", "in_flight", "pace"]
