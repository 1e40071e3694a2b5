"""How a role chooses between its ``rules`` and ``llm`` implementations.

``rules`` is the embedded default, so the whole pipeline runs offline. ``llm``
needs ``TRACEBOUND_LLM_BASE_URL``; without it the role says so once at start and
runs its rules implementation, which is also its fallback on every model failure.
With an endpoint set, the role probes it once at start (:mod:`tracebound.llm.readiness`)
so a misconfigured server is reported loudly instead of being hidden by the fallback.
"""

from __future__ import annotations

import logging
from typing import Literal

from pydantic_settings import SettingsConfigDict

from tracebound import logs
from tracebound.llm import ChatModel, LLMSettings, chat_model_from_settings, readiness
from tracebound.settings import TraceboundSettings, service_prefix

Mode = Literal["rules", "llm"]
log = logging.getLogger("tracebound.services")


class RoleSettings(TraceboundSettings):
    model_config = SettingsConfigDict(frozen=True)

    mode: Mode = "rules"

    @classmethod
    def for_role(cls, role: str) -> RoleSettings:
        return cls(_env_prefix=service_prefix(role))


def model_for(role: str, mode: Mode | None = None) -> ChatModel | None:
    """The chat model a role should use, or None for its rules implementation."""
    chosen = mode or RoleSettings.for_role(role).mode
    if chosen == "rules":
        return None
    settings = LLMSettings()
    model = chat_model_from_settings(settings)
    if model is None:
        log.warning("%s: llm mode needs TRACEBOUND_LLM_BASE_URL; using rules", role)
    elif settings.startup_check:
        logs.configure()  # the check logs from its own thread, maybe before the loop starts
        readiness.start_check(role, settings)
    return model
