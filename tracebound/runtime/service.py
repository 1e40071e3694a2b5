"""What a service is: a name, its input topics, and a pure handler.

The handler is a policy — event in, events out — with no Kafka in sight; the
loop in :mod:`tracebound.runtime.loop` owns consuming, producing, transactions,
dead letters and retries.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from confluent_kafka import TopicPartition
from prometheus_client.registry import Collector

from tracebound import topics
from tracebound.events import Event
from tracebound.runtime.pacing import ModelBudget

In_contra = TypeVar("In_contra", bound=Event, contravariant=True)
Out_co = TypeVar("Out_co", bound=Event, covariant=True)


class Handler(Protocol[In_contra, Out_co]):
    """A role's policy: one input event of the types it accepts in, its outputs out.

    The loop calls it only with events of the spec's ``accepts`` (anything else is
    dead-lettered before it), so a handler names its own input type and needs no check.
    """

    def __call__(self, event: In_contra, /) -> Sequence[Out_co]: ...


# A handler as the loop holds it: its input type is one of ``ServiceSpec.accepts``,
# which the role kit (:mod:`services.common.kit`) checks against the handler's own.
AnyHandler = Handler[Any, Event]
# The outputs that end a run whose input was dead-lettered (the input, the reason).
PoisonHook = Callable[[Event, str], Sequence[Event]]
Router = Callable[[Event], str]
AssignHook = Callable[[list[TopicPartition]], None]


def route_by_event(event: Event) -> str:
    """Default routing: each event goes to the topic of its type (the topic table)."""
    return event.topic


@dataclass(frozen=True)
class ServiceSpec:
    """Everything the loop needs to know about one role.

    ``name`` is the consumer group and the prefix of the stable ``transactional.id``
    (``<name>-<replica_id>``), so a restarted replica fences its previous incarnation.
    """

    name: str
    input_topics: tuple[str, ...]
    handler: AnyHandler
    accepts: tuple[type[Event], ...]
    route: Router = route_by_event
    dead_letter_topic: str = topics.DEAD_LETTERS
    # Every topic it may write to (the topology's ``emits``): a forgotten transaction
    # of its producer is swept from all of them (:mod:`tracebound.runtime.hanging`).
    output_topics: tuple[str, ...] = ()
    extra_consumer_config: dict[str, str] = field(default_factory=dict)
    # For handlers that keep state derived from committed output (e.g. "already
    # answered"): rebuild it for newly assigned partitions, and throw away whatever
    # an uncommitted batch added when the batch is rewound or retried.
    on_assign: AssignHook | None = None
    on_rewind: Callable[[], None] | None = None
    on_commit: Callable[[], None] | None = None
    # The longest one handler call may wait on a model (None: the role calls none).
    # It sets how many calls run at once, the batch size and the poll interval
    # (:mod:`tracebound.runtime.pacing`).
    model_budget: ModelBudget | None = None
    # What the role publishes for a run when one of its inputs is dead-lettered, so
    # the run is answered as failed with the reason at once (None: only the letter).
    on_poison: PoisonHook | None = None
    # Figures the handler keeps itself (e.g. its llm fallbacks), served on /metrics.
    collectors: tuple[Collector, ...] = ()
