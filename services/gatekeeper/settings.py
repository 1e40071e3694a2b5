"""The gatekeeper's rules file setting, ``TRACEBOUND_GATEKEEPER_RULES_PATH``.

Apart from the process wiring because two roles read it: the gatekeeper judges
with these rules, and an ``llm`` executor checks its model's output with the
same rules before publishing (its repair turn), so both name one file. Its
prefix is narrower than the gatekeeper's own so the executor reads this one
variable and none of the gatekeeper's runtime settings.
"""

from __future__ import annotations

from pathlib import Path

from pydantic_settings import SettingsConfigDict

from services.gatekeeper.ruleset import DEFAULT_RULES_PATH, Ruleset, load_ruleset
from tracebound.settings import TraceboundSettings


class GatekeeperRulesSettings(TraceboundSettings):
    model_config = SettingsConfigDict(env_prefix="TRACEBOUND_GATEKEEPER_RULES_", frozen=True)

    path: Path = DEFAULT_RULES_PATH


def configured_ruleset() -> Ruleset:
    """The rule set the deployment's gatekeeper judges with."""
    return load_ruleset(GatekeeperRulesSettings().path)
