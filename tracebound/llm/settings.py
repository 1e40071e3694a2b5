"""Typed settings of the model endpoint (env prefix ``TRACEBOUND_LLM_``).

``base_url`` unset means "no model configured": every role then runs its
deterministic ``rules`` implementation, which is the offline default. Any
OpenAI-compatible endpoint works by pointing ``base_url`` at it (OpenAI
``https://api.openai.com/v1``, Azure OpenAI ``https://<resource>.openai.azure.com/openai/v1``,
vLLM, Ollama ``http://127.0.0.1:11434/v1``, llama.cpp server).

``context_window`` must be the served model's real window (Ollama ``num_ctx``,
vLLM ``--max-model-len``, llama.cpp ``--ctx-size``): every prompt is fitted to it,
minus the ``max_tokens`` reply reserve, before it is sent (:mod:`tracebound.llm.budget`).
"""

from __future__ import annotations

from typing import Self

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import SettingsConfigDict

from tracebound.settings import TraceboundSettings


class LLMSettings(TraceboundSettings):
    """Where the model lives and how patiently to talk to it."""

    model_config = SettingsConfigDict(env_prefix="TRACEBOUND_LLM_", frozen=True)

    base_url: str | None = None
    api_key: SecretStr = SecretStr("not-needed")
    model: str = "gpt-4o-mini"
    timeout_s: float = Field(default=30, gt=0, description="per attempt, not per call")
    max_retries: int = Field(default=2, ge=0, le=10)
    temperature: float = Field(default=0, ge=0, le=2)
    context_window: int = Field(
        default=8192, ge=1024, le=2_000_000, description="tokens the served model accepts"
    )
    max_tokens: int = Field(
        default=1024, ge=16, description="reply tokens, reserved out of the context window"
    )
    tool_result_tokens: int = Field(
        default=1200, ge=64, description="what one tool call may show the executor model"
    )
    tool_round_tokens: int = Field(
        default=2400, ge=64, description="what the tool calls of one model turn may show"
    )

    @model_validator(mode="after")
    def _reply_fits(self) -> Self:
        """A reply reserve that leaves no room for a prompt is a configuration error."""
        if self.max_tokens > self.context_window // 2:
            raise ValueError(
                f"max_tokens ({self.max_tokens}) must be at most half of "
                f"context_window ({self.context_window})"
            )
        return self

    @property
    def configured(self) -> bool:
        """True when a model endpoint is set; roles use ``rules`` otherwise."""
        return bool(self.base_url)


__all__ = ["LLMSettings"]
