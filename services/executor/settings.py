"""Executor settings (env prefix ``TRACEBOUND_EXECUTOR_``): harness limits (docs/contracts.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from tracebound.settings import TraceboundSettings


class ExecutorSettings(TraceboundSettings):
    model_config = SettingsConfigDict(env_prefix="TRACEBOUND_EXECUTOR_", frozen=True)

    mode: Literal["rules", "llm"] = "rules"
    max_calls_per_round: int = Field(default=6, ge=1, le=50)
    max_failures_per_tool: int = Field(default=2, ge=1, le=20)
    tool_timeout_s: float = Field(default=10.0, gt=0, le=300)
    max_claims_narrow: int = Field(default=2, ge=1, le=2)
    max_claims_broad: int = Field(default=16, ge=1, le=24)
    max_model_turns: int = Field(default=6, ge=1, le=20)
    # llm mode: one repair turn when the gatekeeper's rules would reject the model's output
    repair_turn: bool = True
