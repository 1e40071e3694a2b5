"""Which recorded model calls are repair turns, told from the step alone.

A repair turn (the executor's one chance to fix output the gatekeeper would
reject) is an ordinary model call, so it is an ordinary ``AgentStep``: what
marks it is the user turn it answers, whose text begins with
:data:`REPAIR_PREFIX` and therefore so does the step's input summary. The
role that writes the turn and the trace that shows it both read the marker
here, so the two cannot drift apart, and no event schema changes for it.
"""

from __future__ import annotations

REPAIR_PREFIX = "repair:"


def is_repair_input(model_input: str | None) -> bool:
    """True when a step's ``model_input`` summary is that of a repair turn.

    The summary reads ``"<role>: <text>"`` (see ``summarize_input``); the
    marker is the start of the text.
    """
    if not model_input:
        return False
    _role, _sep, text = model_input.partition(": ")
    return text.startswith(REPAIR_PREFIX)


__all__ = ["REPAIR_PREFIX", "is_repair_input"]
