"""The LLM port and its OpenAI-compatible adapter.

Role handlers import from here: :class:`ChatModel` to depend on, :class:`ModelError`
to fall back on, :class:`StepRecorder` to trace each call (and fit its prompt to
the :class:`PromptBudget`), and the structured parsers to read JSON replies
without ever crashing on them.
"""

from tracebound.llm.budget import PromptBudget, PromptOverBudget, Trim, budget_for
from tracebound.llm.openai_model import OpenAIChatModel, chat_model_from_settings
from tracebound.llm.port import (
    ChatModel,
    ModelError,
    ModelReply,
    ToolCall,
    assistant_message,
    tool_message,
)
from tracebound.llm.settings import LLMSettings
from tracebound.llm.steps import ModelCallFailed, StepRecorder
from tracebound.llm.structured import ParseOutcome, parse_json_object, parse_model

__all__ = [
    "ChatModel",
    "LLMSettings",
    "ModelCallFailed",
    "ModelError",
    "ModelReply",
    "OpenAIChatModel",
    "ParseOutcome",
    "PromptBudget",
    "PromptOverBudget",
    "StepRecorder",
    "ToolCall",
    "Trim",
    "assistant_message",
    "budget_for",
    "chat_model_from_settings",
    "parse_json_object",
    "parse_model",
    "tool_message",
]
