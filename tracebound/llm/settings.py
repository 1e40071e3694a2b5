"""Typed settings of the model endpoint (env prefix ``TRACEBOUND_LLM_``).

``base_url`` unset means "no model configured": every role then runs its
deterministic ``rules`` implementation, which is the offline default. Any
OpenAI-compatible endpoint works by pointing ``base_url`` at it (OpenAI
``https://api.openai.com/v1``, Azure OpenAI ``https://<resource>.openai.azure.com/openai/v1``,
vLLM, Ollama ``http://127.0.0.1:11434/v1``, llama.cpp server).

Only what is configured is sent: servers disagree on parameters (OpenAI's
o-series and gpt-5 reject ``temperature`` and want ``max_completion_tokens``;
a strict proxy refuses a field it does not know), so ``temperature`` is unset by
default, the token limit's field name is a setting, and whatever one server
needs besides goes into ``extra_body``.

``context_window`` must be the served model's real window (Ollama ``num_ctx``,
vLLM ``--max-model-len``, llama.cpp ``--ctx-size``): every prompt is fitted to it,
minus the ``max_tokens`` reply reserve, before it is sent (:mod:`tracebound.llm.budget`).
"""

from __future__ import annotations

from typing import Any, Literal, Self

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import SettingsConfigDict

from tracebound.settings import TraceboundSettings

_CORE_FIELDS = frozenset({"model", "messages", "tools", "response_format", "stream"})


class LLMSettings(TraceboundSettings):
    """Where the model lives and how patiently to talk to it."""

    # ``TRACEBOUND_LLM_TEMPERATURE=none`` sends no temperature (o-series, gpt-5 refuse one).
    model_config = SettingsConfigDict(
        env_prefix="TRACEBOUND_LLM_", frozen=True, env_parse_none_str="none"
    )

    base_url: str | None = None
    api_key: SecretStr = SecretStr("not-needed")
    model: str = "gpt-4o-mini"
    timeout_s: float = Field(
        default=30,
        gt=0,
        description="per attempt, not per call; the least a call gets once the server's "
        "speed is measured (tracebound.llm.deadline)",
    )
    timeout_ceiling_s: float = Field(
        default=120,
        gt=0,
        description="the most one call may get when the measured speed says it needs longer",
    )
    max_retries: int = Field(default=2, ge=0, le=10)
    temperature: float | None = Field(default=None, ge=0, le=2, description="unset: not sent")
    startup_check: bool = Field(default=True, description="probe the endpoint at role start")
    server_tokenizer: bool = Field(
        default=True,
        description="count prompt tokens with the server's tokenizer where it offers one"
        " (llama.cpp /apply-template and /tokenize, vLLM /tokenize)",
    )
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = Field(
        default="max_tokens", description="max_completion_tokens for o-series / gpt-5 endpoints"
    )
    response_format: Literal["json_object", "json_schema", "none"] = Field(
        default="json_object",
        description="how JSON replies are asked for: json_schema sends the role's reply "
        "schema (servers with structured outputs), none sends no response_format",
    )
    extra_body: dict[str, Any] = Field(
        default_factory=dict, description="extra request fields for this server (JSON object)"
    )

    @field_validator("extra_body")
    @classmethod
    def _no_core_fields(cls, value: dict[str, Any]) -> dict[str, Any]:
        """Extra fields add to a request; they may not replace what the roles send."""
        clash = sorted(set(value) & _CORE_FIELDS)
        if clash:
            raise ValueError(f"extra_body may not set {', '.join(clash)}")
        return value

    context_window: int = Field(
        default=8192, ge=1024, le=2_000_000, description="tokens the served model accepts"
    )
    max_tokens: int = Field(
        default=1024,
        ge=16,
        le=1_000_000,
        description="reply token limit sent to the server, reserved out of the context window",
    )
    tool_result_tokens: int = Field(
        default=1200, ge=64, description="what one tool call may show the executor model"
    )
    tool_round_tokens: int = Field(
        default=2400, ge=64, description="what the tool calls of one model turn may show"
    )
    profile: Literal["default", "small"] = Field(
        default="default",
        description="small: leaner prompts for models with 4k-8k windows (fewer refs, "
        "shorter excerpts, no examples, no tool specs when the plan has calls)",
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
