"""``python -m services.verifier``: the verifier process (wiring only)."""

from __future__ import annotations

import sys

from services.common.budget import single_call_budget
from services.common.inputs import role_inputs
from services.common.mode import model_for
from services.verifier.handler import SERVICE, VerifierHandler
from tracebound.runtime import ServiceSpec, run_service


def main() -> int:
    input_topics, accepts = role_inputs(SERVICE)
    model = model_for(SERVICE)
    spec = ServiceSpec(
        name=SERVICE,
        input_topics=input_topics,
        accepts=accepts,
        handler=VerifierHandler(model=model),
        model_budget=single_call_budget(model),
    )
    return run_service(spec)


if __name__ == "__main__":
    sys.exit(main())
