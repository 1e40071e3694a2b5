"""The note a trimmed prompt's ``AgentStep.model_input`` opens with, written and read here.

Why a module of its own, outside ``tracebound.llm``: the step recorder writes the
note and the trace reads it back, and the trace is served by processes that never
talk to a model (the ingest, the projections), which should not load the model
client to parse one bracket.
"""

from __future__ import annotations

from collections.abc import Sequence

MARK = "[budget "
CUTS_LIMIT = 160


def budget_note(tokens: int, limit: int, cuts: Sequence[str]) -> str:
    """``budget <estimate>/<limit> tokens, cut: <first cuts>`` (cut short past 160 chars)."""
    text = "; ".join(cuts)
    if len(text) > CUTS_LIMIT:
        text = text[:CUTS_LIMIT].rstrip() + f"… ({len(cuts)} cuts)"
    return f"budget {tokens}/{limit} tokens, cut: {text}"


def budget_of(model_input: str | None) -> str | None:
    """The note a trimmed step's input opens with, or None when nothing was cut."""
    if not model_input or not model_input.startswith(MARK):
        return None
    end = model_input.find("] ")
    return model_input[1:end] if end > 0 else None


__all__ = ["MARK", "budget_note", "budget_of"]
