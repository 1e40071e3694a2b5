"""``python -m services.gatekeeper``: the gatekeeper process (wiring only)."""

from __future__ import annotations

import sys
from functools import partial

from services.common.failed_run import dead_letter_verdict
from services.common.inputs import role_inputs, role_outputs
from services.gatekeeper.handler import SERVICE, GatekeeperHandler
from services.gatekeeper.settings import configured_ruleset
from tracebound.runtime import ServiceSpec, run_service


def main() -> int:
    input_topics, accepts = role_inputs(SERVICE)
    spec = ServiceSpec(
        name=SERVICE,
        input_topics=input_topics,
        on_poison=partial(dead_letter_verdict, SERVICE),
        output_topics=role_outputs(SERVICE),
        accepts=accepts,
        handler=GatekeeperHandler(configured_ruleset()),
    )
    return run_service(spec)


if __name__ == "__main__":
    sys.exit(main())
