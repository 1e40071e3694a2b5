"""Typed settings of the model endpoint (env prefix ``TRACEBOUND_LLM_``).

``base_url`` unset means "no model configured": every role then runs its
deterministic ``rules`` implementation, which is the offline default. Any
OpenAI-compatible endpoint works by pointing ``base_url`` at it (OpenAI
``https://api.openai.com/v1``, Azure OpenAI ``https://<resource>.openai.azure.com/openai/v1``,
vLLM, Ollama ``http://127.0.0.1:11434/v1``, llama.cpp server).
"""

from __future__ import annotations

from pydantic import Field, SecretStr
from pydantic_settings import SettingsConfigDict

from tracebound.settings import TraceboundSettings


class LLMSettings(TraceboundSettings):
    """Where the model lives and how patiently to talk to it."""

    # ``TRACEBOUND_LLM_TEMPERATURE=none`` sends no temperature (o-series, gpt-5 refuse one).
    model_config = SettingsConfigDict(
        env_prefix="TRACEBOUND_LLM_", frozen=True, env_parse_none_str="none"
    )

    base_url: str | None = None
    api_key: SecretStr = SecretStr("not-needed")
    model: str = "gpt-4o-mini"
    timeout_s: float = Field(default=30, gt=0, description="per attempt, not per call")
    max_retries: int = Field(default=2, ge=0, le=10)
    temperature: float | None = Field(default=0, ge=0, le=2, description="none: not sent")
    startup_check: bool = Field(default=True, description="probe the endpoint at role start")
    context_window: int = Field(
        default=8192, ge=512, description="tokens the server gives the model (prompt + reply)"
    )

    @property
    def configured(self) -> bool:
        """True when a model endpoint is set; roles use ``rules`` otherwise."""
        return bool(self.base_url)


__all__ = ["LLMSettings"]
