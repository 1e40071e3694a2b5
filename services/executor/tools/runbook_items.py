"""Runbook sections as plain lines: one item per list entry, markdown removed.

Why: runbook knowledge reaches an answer as what it is — a *likely cause* is an
unverified hypothesis and a *check* is a next step — one line each, never a
pasted section with its bullets, emphasis and line breaks. Which headings hold
causes and checks is data (``rules/executor-claims.json``, ``runbook_sections``),
so a translated runbook only needs its headings listed there; every other
section (overview, symptoms, mitigation, escalation) yields no hypothesis and
no step.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

_BULLET = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+")
_HEADING = re.compile(r"^\s*#+\s*")
_EMPHASIS = re.compile(r"\*\*|__|`")
MAX_ITEM_CHARS = 300


def _plain(text: str) -> str:
    text = _EMPHASIS.sub("", _HEADING.sub("", text))
    text = " ".join(text.split())
    return text if len(text) <= MAX_ITEM_CHARS else text[: MAX_ITEM_CHARS - 1].rstrip() + "…"


def section_items(content: str) -> tuple[str, ...]:
    """Each list entry (continuation lines joined) or paragraph of a section, as plain text."""
    items: list[list[str]] = []
    fresh = True
    for line in content.splitlines():
        if not line.strip():
            fresh = True
            continue
        if _BULLET.match(line) or fresh:
            items.append([_BULLET.sub("", line)])
        else:
            items[-1].append(line)
        fresh = False
    return tuple(text for item in items if (text := _plain(" ".join(item))))


def section_kind(heading: str, kinds: Mapping[str, Sequence[str]]) -> str | None:
    """The kind (``causes``, ``checks``) whose headings include ``heading``, ignoring case."""
    key = " ".join(heading.split()).casefold()
    for kind, headings in kinds.items():
        if any(key == " ".join(h.split()).casefold() for h in headings):
            return kind
    return None


__all__ = ["section_items", "section_kind"]
