"""``python -m services.gatekeeper``: the gatekeeper process (wiring only)."""

from __future__ import annotations

import sys
from pathlib import Path

from pydantic_settings import SettingsConfigDict

from services.gatekeeper.handler import SERVICE, GatekeeperHandler
from services.gatekeeper.ruleset import DEFAULT_RULES_PATH, load_ruleset
from tracebound import topics
from tracebound.events import EvidenceProduced
from tracebound.runtime import ServiceSpec, run_service
from tracebound.settings import TraceboundSettings


class GatekeeperSettings(TraceboundSettings):
    model_config = SettingsConfigDict(env_prefix="TRACEBOUND_GATEKEEPER_", frozen=True)

    rules_path: Path = DEFAULT_RULES_PATH


def main() -> int:
    ruleset = load_ruleset(GatekeeperSettings().rules_path)
    spec = ServiceSpec(
        name=SERVICE,
        input_topics=(topics.EVIDENCE,),
        handler=GatekeeperHandler(ruleset),
        accepts=(EvidenceProduced,),
    )
    return run_service(spec)


if __name__ == "__main__":
    sys.exit(main())
