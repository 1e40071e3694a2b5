"""``python -m services.gatekeeper``: the gatekeeper process (wiring only)."""

from __future__ import annotations

import sys
from pathlib import Path

from pydantic_settings import SettingsConfigDict

from services.common.inputs import role_inputs
from services.gatekeeper.handler import SERVICE, GatekeeperHandler
from services.gatekeeper.ruleset import DEFAULT_RULES_PATH, load_ruleset
from tracebound.runtime import ServiceSpec, run_service
from tracebound.settings import TraceboundSettings


class GatekeeperSettings(TraceboundSettings):
    model_config = SettingsConfigDict(env_prefix="TRACEBOUND_GATEKEEPER_", frozen=True)

    rules_path: Path = DEFAULT_RULES_PATH


def main() -> int:
    ruleset = load_ruleset(GatekeeperSettings().rules_path)
    input_topics, accepts = role_inputs(SERVICE)
    spec = ServiceSpec(
        name=SERVICE,
        input_topics=input_topics,
        accepts=accepts,
        handler=GatekeeperHandler(ruleset),
    )
    return run_service(spec)


if __name__ == "__main__":
    sys.exit(main())
