"""``python -m services.verifier``: the verifier process (wiring only)."""

from __future__ import annotations

import sys

from services.common.mode import model_for
from services.verifier.handler import SERVICE, VerifierHandler
from tracebound import topics
from tracebound.events import GatekeeperResult
from tracebound.runtime import ServiceSpec, run_service


def main() -> int:
    spec = ServiceSpec(
        name=SERVICE,
        input_topics=(topics.GATEKEEPER_RESULTS,),
        handler=VerifierHandler(model=model_for(SERVICE)),
        accepts=(GatekeeperResult,),
    )
    return run_service(spec)


if __name__ == "__main__":
    sys.exit(main())
