"""The role kit: every pipeline role's process, built from its declaration in the topology.

A role is declared once, in :data:`tracebound.topology.ROLES`: the events it accepts
and emits, whether it calls a model, and the dotted path of its wiring factory
(``services.<role>.wiring:build``). The factory makes only what is the role's own
(its handler, its dead-letter hook, the composer's answered-runs hooks, the
executor's model budget) as a :class:`Wiring`; the kit does the rest the same way
for every role: input and output topics, accepted event types, the chat model and
its fallback monitor, the model budget of a role that asks its model once per input,
the collectors served on ``/metrics``, and the service loop.

Each ``python -m services.<role>`` is one call of :func:`role_process`.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from prometheus_client.registry import Collector

from services.common.inputs import role_inputs, role_outputs
from tracebound.errors import ConfigError
from tracebound.events import Event
from tracebound.runtime import Handler, ServiceSpec, run_service
from tracebound.runtime.pacing import ModelBudget
from tracebound.runtime.service import AssignHook, PoisonHook
from tracebound.settings import KafkaSettings
from tracebound.topology import Role, role

if TYPE_CHECKING:
    from tracebound.llm import ChatModel
    from tracebound.llm.monitor import FallbackMonitor

In = TypeVar("In", bound=Event)


@dataclass(frozen=True)
class RoleContext:
    """What the kit hands a role's factory: its declaration and the parts every role shares.

    ``model`` is None for a role that calls none, or runs its ``rules`` implementation.
    """

    role: Role
    model: ChatModel | None
    monitor: FallbackMonitor | None
    kafka: KafkaSettings

    @property
    def name(self) -> str:
        return self.role.name


@dataclass(frozen=True)
class Wiring(Generic[In]):
    """What a role's factory makes: its handler and the hooks only it has.

    ``inputs`` are the event types the handler takes; the kit checks them against the
    topology's ``accepts``, and the loop hands the handler nothing else (an input of
    another type is dead-lettered before it). ``model_budget`` left None is the budget
    of one model call per input when the role has a model.
    """

    handler: Handler[In, Event]
    inputs: tuple[type[In], ...]
    on_poison: PoisonHook | None = None
    model_budget: ModelBudget | None = None
    on_assign: AssignHook | None = None
    on_rewind: Callable[[], None] | None = None
    on_commit: Callable[[], None] | None = None
    collectors: tuple[Collector, ...] = ()


Factory = Callable[[RoleContext], Wiring[Any]]


def load_factory(name: str) -> Factory:
    """The wiring factory the topology names for the role called ``name``."""
    declared = role(name)
    module, _, attr = declared.wiring.partition(":")
    if not module or not attr:
        raise ConfigError(f"role {name!r} declares no wiring factory (module:function)")
    factory: Factory = getattr(importlib.import_module(module), attr)
    return factory


def role_context(name: str, kafka: KafkaSettings | None = None) -> RoleContext:
    """The shared parts of the role called ``name``: its model and monitor when it calls one."""
    declared = role(name)
    model, monitor = None, None
    if declared.model:
        # only a role with a model loads the model client (and its settings)
        from services.common.mode import model_for  # noqa: PLC0415
        from tracebound.llm.monitor import FallbackMonitor  # noqa: PLC0415

        model, monitor = model_for(name), FallbackMonitor()
    return RoleContext(declared, model, monitor, kafka or KafkaSettings())


def build_spec(
    name: str, factory: Factory | None = None, context: RoleContext | None = None
) -> ServiceSpec:
    """The service of the role called ``name``, from its declaration and its factory."""
    context = context or role_context(name)
    input_topics, accepts = role_inputs(name)
    wiring = (factory or load_factory(name))(context)
    if set(wiring.inputs) != set(accepts):
        declared = sorted(t.__name__ for t in accepts)
        handled = sorted(t.__name__ for t in wiring.inputs)
        raise ConfigError(
            f"role {name!r}: its handler takes {handled}, the topology gives it {declared}"
        )
    budget = wiring.model_budget
    collectors: tuple[Collector, ...] = ()
    if context.role.model:
        from services.common.budget import single_call_budget  # noqa: PLC0415
        from tracebound.llm import readiness  # noqa: PLC0415
        from tracebound.llm.tokens import CALIBRATION  # noqa: PLC0415

        if budget is None:
            budget = single_call_budget(context.model)
        if context.monitor is not None:
            collectors = (context.monitor, readiness.COLLECTOR, CALIBRATION)
    return ServiceSpec(
        name=name,
        input_topics=input_topics,
        handler=wiring.handler,
        accepts=accepts,
        output_topics=role_outputs(name),
        on_assign=wiring.on_assign,
        on_rewind=wiring.on_rewind,
        on_commit=wiring.on_commit,
        model_budget=budget,
        on_poison=wiring.on_poison,
        collectors=(*collectors, *wiring.collectors),
    )


def run_role(name: str, factory: Factory | None = None) -> int:
    """Build the role called ``name`` and run its service loop until it stops."""
    context = role_context(name)
    return run_service(build_spec(name, factory, context), context.kafka)


def role_process(name: str, module: str) -> None:
    """``python -m services.<role>``: run the role when ``module`` is ``__main__``.

    The role's wiring is imported either way, so importing its ``__main__`` loads
    what the process runs (its settings classes included).
    """
    factory = load_factory(name)
    if module == "__main__":
        sys.exit(run_role(name, factory))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m services.common.kit <role>")
    sys.exit(run_role(sys.argv[1]))
