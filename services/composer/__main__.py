"""``python -m services.composer``: the composer process (wiring only)."""

from __future__ import annotations

import sys

from services.common.budget import single_call_budget
from services.common.inputs import role_inputs, role_outputs
from services.common.mode import model_for
from services.composer.answered import AnsweredRuns, AnsweredSettings, OncePerRun
from services.composer.handler import SERVICE, ComposerHandler
from services.verifier.rules_file import load_verifier_rules
from tracebound.codec import make_codec
from tracebound.llm import readiness
from tracebound.llm.monitor import FallbackMonitor
from tracebound.runtime import ServiceSpec, run_service
from tracebound.settings import KafkaSettings


def main() -> int:
    kafka = KafkaSettings()
    answered = AnsweredRuns(kafka, make_codec(kafka), AnsweredSettings().answered_window_s)
    monitor = FallbackMonitor()
    input_topics, accepts = role_inputs(SERVICE)
    model = model_for(SERVICE)
    once = OncePerRun(
        ComposerHandler(model, rules=load_verifier_rules(), monitor=monitor), answered
    )
    spec = ServiceSpec(
        name=SERVICE,
        input_topics=input_topics,
        output_topics=role_outputs(SERVICE),
        accepts=accepts,
        handler=once,
        on_poison=once.failed,
        collectors=(monitor, readiness.COLLECTOR),
        on_assign=answered.restore,
        on_rewind=answered.forget,
        on_commit=answered.commit,
        model_budget=single_call_budget(model),
    )
    return run_service(spec, kafka)


if __name__ == "__main__":
    sys.exit(main())
