"""``python -m services.composer``: the composer process (wiring only)."""

from __future__ import annotations

import sys

from services.composer.handler import SERVICE, ComposerHandler
from tracebound import topics
from tracebound.events import Verdict
from tracebound.runtime import ServiceSpec, run_service


def main() -> int:
    spec = ServiceSpec(
        name=SERVICE,
        input_topics=(topics.VERDICTS,),
        handler=ComposerHandler(),
        accepts=(Verdict,),
    )
    return run_service(spec)


if __name__ == "__main__":
    sys.exit(main())
