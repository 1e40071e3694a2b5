"""The context budget: every prompt is sized before it is sent, and made to fit.

Why: a server that receives more tokens than its context window either refuses the
request or cuts the prompt — Ollama keeps a handful of its first tokens and the
last ones that fit ``num_ctx``, which drops most of the system instructions — and
the reply is then an answer to a prompt nobody wrote. So the prompt is sized on
our side, against the configured window minus the reply reserve
(``TRACEBOUND_LLM_CONTEXT_WINDOW`` − ``TRACEBOUND_LLM_MAX_TOKENS``), and a prompt
over that limit is made smaller in a defined order, or not sent at all
(:class:`PromptOverBudget`, a :class:`ModelError`: the role falls back to its rules).

Why an estimate and not the model's tokenizer: the served model is any model behind
an OpenAI-compatible endpoint, and shipping every tokenizer is out of proportion.
The estimate counts Latin text (letters, digits, JSON punctuation) as characters ÷
``chars_per_token`` and each CJK character as ``cjk_tokens_per_char`` tokens, with a
factor table per model family in ``rules/token-families.json`` whose figures lean
high, plus a fixed overhead per message for the chat template.

How trimming works: the caller passes *trims*, each a label and a way to build a
smaller version of the whole message list, ordered so each one cuts more than the
one before (the role decides what goes first: oldest tool results, then long
excerpts, …; never the system instructions or the question). :meth:`PromptBudget.fit`
sends the original when it fits, else the first trim that does, and reports every
cut it applied so the step recorder can put it in the trace.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tracebound import resources
from tracebound.errors import ConfigError
from tracebound.llm.port import ChatModel, ModelError
from tracebound.llm.settings import LLMSettings
from tracebound.llm.tokens import CALIBRATION

FAMILIES_PATH = resources.path("rules", "token-families.json")
MESSAGE_OVERHEAD = 6  # role markers and separators of the chat template, per message
REPLY_PRIMING = 3  # the template's opening of the assistant turn
TOOL_OVERHEAD = 12  # the wire wrapper ({"type": "function", "function": …}) per tool spec
MAX_FAMILIES = 64

Messages = list[dict[str, Any]]
DataT = TypeVar("DataT")


class TokenFamily(BaseModel):
    """How one family of models turns text into tokens, roughly and on the high side."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    markers: tuple[str, ...] = ()
    chars_per_token: float = Field(gt=0.5, le=10)
    cjk_tokens_per_char: float = Field(gt=0, le=4)


class _FamilyFile(BaseModel):
    model_config = ConfigDict(extra="ignore")

    version: str
    families: tuple[TokenFamily, ...] = Field(min_length=1, max_length=MAX_FAMILIES)


@cache
def load_families(path: Path = FAMILIES_PATH) -> tuple[TokenFamily, ...]:
    """The family table, read once; the last entry without markers is the default."""
    try:
        table = _FamilyFile.model_validate_json(path.read_bytes())
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the token families: {exc.strerror}") from None
    except ValidationError as exc:
        raise ConfigError(f"{path}: invalid token families: {exc.error_count()} error(s)") from None
    if table.families[-1].markers:
        raise ConfigError(f"{path}: the last family must be the default (no markers)")
    return table.families


def family_for(model_name: str, families: Sequence[TokenFamily] | None = None) -> TokenFamily:
    """The family whose marker the model name contains first, else the default."""
    table = families if families is not None else load_families()
    name = model_name.lower()
    for family in table:
        if any(marker.lower() in name for marker in family.markers):
            return family
    return table[-1]


def _is_cjk(char: str) -> bool:
    """Han, kana, hangul and fullwidth forms: about one token each, not a quarter."""
    code = ord(char)
    return (
        0x2E80 <= code <= 0x9FFF
        or 0xAC00 <= code <= 0xD7AF
        or 0xF900 <= code <= 0xFAFF
        or 0xFF00 <= code <= 0xFFEF
        or 0x20000 <= code <= 0x3FFFF
    )


def estimate_text(text: str, family: TokenFamily) -> int:
    """Estimated tokens of ``text`` for ``family`` (0 for empty text)."""
    if not text:
        return 0
    cjk = wide = 0
    for char in text:
        if char > "\u007f":
            if _is_cjk(char):
                cjk += 1
            else:
                wide += 1
    # Other non-ASCII characters (accents, symbols, emoji) count double: several bytes each.
    latin = len(text) - cjk + wide
    return math.ceil(latin / family.chars_per_token + cjk * family.cjk_tokens_per_char)


def _message_text(message: Mapping[str, Any]) -> str:
    """Every part of a message the server tokenizes: content and echoed tool calls."""
    parts: list[str] = []
    content = message.get("content")
    if isinstance(content, str):
        parts.append(content)
    elif content is not None:
        parts.append(json.dumps(content, ensure_ascii=False))
    for key in ("tool_calls", "tool_call_id", "name"):
        if message.get(key):
            value = message[key]
            parts.append(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))
    return "\n".join(parts)


def estimate_messages(
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] | None,
    family: TokenFamily,
) -> int:
    """Estimated prompt tokens of a request: messages, tool specs and template overhead."""
    total = REPLY_PRIMING
    for message in messages:
        total += MESSAGE_OVERHEAD + estimate_text(_message_text(message), family)
    if tools:
        total += TOOL_OVERHEAD * len(tools)
        bare = [bare_tool(t) for t in tools]
        total += estimate_text(json.dumps(bare, ensure_ascii=False), family)
    return total


def bare_tool(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    """A tool spec without its wire wrapper, which :data:`TOOL_OVERHEAD` already counts.

    So a spec costs the same whether it is counted before the client wraps it or as sent.
    """
    inner = spec.get("function") if spec.get("type") == "function" else None
    return inner if isinstance(inner, Mapping) else spec


class PromptOverBudget(ModelError):
    """No trim brings the prompt within the window: it is not sent (the role falls back)."""

    def __init__(self, tokens: int, limit: int, cuts: Sequence[str]) -> None:
        tried = f" after {len(cuts)} cut(s)" if cuts else ""
        super().__init__(
            f"prompt of about {tokens} tokens exceeds the budget of {limit}{tried}",
            kind="over_budget",
        )
        self.tokens = tokens
        self.limit = limit


@dataclass(frozen=True, slots=True)
class Trim:
    """One smaller version of a prompt: what it cuts (for the trace) and how to build it."""

    label: str
    build: Callable[[], Messages]


@dataclass(frozen=True, slots=True)
class Fitted:
    """The messages to send, their estimate, the limit, and the cuts that got them there."""

    messages: Messages
    tokens: int
    limit: int
    cuts: tuple[str, ...] = ()


Counter = Callable[[Sequence[Mapping[str, Any]], Sequence[Mapping[str, Any]] | None], int | None]


@dataclass(frozen=True, slots=True)
class PromptBudget:
    """The window a role's prompts must fit, and the caps on what tools may show the model.

    ``counter`` is the server's own count (:class:`~tracebound.llm.tokens.ServerTokenizer`)
    when it has one; otherwise the family estimate is scaled by what the server's
    replies taught (:class:`~tracebound.llm.tokens.Calibration`).
    """

    family: TokenFamily
    context_window: int
    reply_tokens: int
    tool_result_tokens: int
    tool_round_tokens: int
    model: str = ""
    counter: Counter | None = None
    profile: str = "default"

    @classmethod
    def from_settings(
        cls, settings: LLMSettings, model_name: str | None = None, counter: Counter | None = None
    ) -> PromptBudget:
        return cls(
            family=family_for(model_name or settings.model),
            context_window=settings.context_window,
            reply_tokens=settings.max_tokens,
            tool_result_tokens=settings.tool_result_tokens,
            tool_round_tokens=settings.tool_round_tokens,
            model=model_name or settings.model,
            counter=counter,
            profile=settings.profile,
        )

    @property
    def small(self) -> bool:
        """The ``small`` profile: show the model less (``TRACEBOUND_LLM_PROFILE``)."""
        return self.profile == "small"

    @property
    def limit(self) -> int:
        """Prompt tokens allowed: the window minus what the reply may use."""
        return self.context_window - self.reply_tokens

    def tokens(self, text: str) -> int:
        return CALIBRATION.scaled(self.model, estimate_text(text, self.family))

    def estimate(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None
    ) -> int:
        """The server's count where it gives one, else the calibrated estimate."""
        if self.counter is not None:
            counted = self.counter(messages, tools)
            if counted is not None:
                return counted
        return CALIBRATION.scaled(self.model, estimate_messages(messages, tools, self.family))

    def fit(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        trims: Iterable[Trim] = (),
    ) -> Fitted:
        """The messages as they are, or the first trim that fits; PromptOverBudget if none."""
        tokens = self.estimate(messages, tools)
        if tokens <= self.limit:
            return Fitted([dict(m) for m in messages], tokens, self.limit)
        cuts: list[str] = []
        for trim in trims:
            cuts.append(trim.label)
            candidate = trim.build()
            tokens = self.estimate(candidate, tools)
            if tokens <= self.limit:
                return Fitted(candidate, tokens, self.limit, tuple(cuts))
        raise PromptOverBudget(tokens, self.limit, cuts)


def staged_trims(
    data: DataT,
    stages: Sequence[tuple[str, Callable[[DataT], DataT]]],
    render: Callable[[DataT], Messages],
) -> Iterator[Trim]:
    """Cumulative trims of a prompt built from ``data``: stage k applies reductions 1…k.

    Lazy: a reduction runs only when the budget asks for the next, smaller version.
    """
    for label, reduce in stages:
        data = reduce(data)
        yield Trim(label, partial(render, data))


def clip_fields(value: Any, keys: frozenset[str], limit: int) -> Any:
    """A copy of JSON-like ``value`` whose strings under ``keys`` are cut to ``limit`` chars.

    Every string under such a key is clipped, however deep (a list of excerpts, a
    mapping of annotations); a cut string ends with an ellipsis so a reader sees
    it is partial.
    """
    if isinstance(value, Mapping):
        return {
            k: _clip_value(v, limit) if k in keys else clip_fields(v, keys, limit)
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [clip_fields(item, keys, limit) for item in value]
    return value


def _clip_value(value: Any, limit: int) -> Any:
    if isinstance(value, str):
        return value if len(value) <= limit else value[:limit].rstrip() + "…"
    if isinstance(value, Mapping):
        return {k: _clip_value(v, limit) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clip_value(item, limit) for item in value]
    return value


def budget_for(model: ChatModel) -> PromptBudget:
    """The budget of ``model``: from its settings when it has them, else the defaults;
    counted by its server when the model offers a count (``count_tokens``)."""
    settings = getattr(model, "settings", None)
    if not isinstance(settings, LLMSettings):
        settings = LLMSettings.model_construct()
    return PromptBudget.from_settings(settings, model.name, getattr(model, "count_tokens", None))


__all__ = [
    "FAMILIES_PATH",
    "Fitted",
    "PromptBudget",
    "PromptOverBudget",
    "TokenFamily",
    "Trim",
    "budget_for",
    "clip_fields",
    "estimate_messages",
    "estimate_text",
    "family_for",
    "load_families",
    "staged_trims",
]
