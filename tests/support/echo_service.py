"""A test-only service on the real runtime: DiagnosisRequested in, AgentStep out.

Used by the exactly-once, dead-letter and broker-restart tests. Topics, group and
an optional per-message delay and model budget come from the environment so the tests can run it
as a separate process and kill it.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence

from tracebound.errors import PoisonInput
from tracebound.events import AgentStep, DiagnosisRequested, Event
from tracebound.runtime import ModelBudget, ServiceSpec, run_service


def echo(event: Event) -> Sequence[Event]:
    """The echo's one output: an ``AgentStep`` with the query upper-cased."""
    assert isinstance(event, DiagnosisRequested)
    return [
        event.reply(
            AgentStep,
            "echo",
            agent_name="echo",
            step_index=0,
            model_input=event.request.query,
            model_output=event.request.query.upper(),
            has_tool_call=False,
            duration_ms=0,
        )
    ]


def make_spec() -> ServiceSpec:
    in_topic = os.environ["TB_TEST_IN"]
    out_topic = os.environ["TB_TEST_OUT"]
    delay = float(os.environ.get("TB_TEST_DELAY_MS", "0")) / 1000
    # Set: the service paces itself like a role waiting on a model that long per input.
    budget_s = os.environ.get("TB_TEST_BUDGET_S")

    def handle(event: Event) -> Sequence[Event]:
        assert isinstance(event, DiagnosisRequested)
        if event.request.query.startswith("poison:"):
            raise PoisonInput("the handler refuses queries marked poison")
        if delay:
            time.sleep(delay)
        return echo(event)

    return ServiceSpec(
        name=os.environ["TB_TEST_GROUP"],
        input_topics=(in_topic,),
        handler=handle,
        accepts=(DiagnosisRequested,),
        route=lambda _event: out_topic,
        dead_letter_topic=os.environ["TB_TEST_DLQ"],
        output_topics=(out_topic,),
        model_budget=ModelBudget(float(budget_s), ("TB_TEST_BUDGET_S",)) if budget_s else None,
    )


if __name__ == "__main__":
    sys.exit(run_service(make_spec()))
