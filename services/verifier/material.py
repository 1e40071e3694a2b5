"""The executor's lists as the composer may use them: plain texts and evidence-only actions.

Why filter actions: in this contract a recommended action may only gather
evidence or continue the investigation (the executor evidence contract,
docs/contracts.md); a remediation ("restart", "scale", "roll back") is a
conclusion the evidence has not earned,
so it never reaches the composer, whatever the executor wrote.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from services.verifier.rules_file import VerifierRules

_TEXT_KEYS = ("text", "action_text", "action", "hypothesis", "description", "info", "summary")


def _item_text(item: Any) -> str | None:
    if isinstance(item, str):
        return item.strip() or None
    if isinstance(item, dict):
        for key in _TEXT_KEYS:
            value = item.get(key)
            if isinstance(value, str) and value.strip():
                return value.strip()
    return None


def texts(value: Any) -> list[str]:
    """The non-empty texts of a list of strings or objects with a text field, deduplicated."""
    items = value if isinstance(value, list) else []
    return list(dict.fromkeys(t for t in (_item_text(item) for item in items) if t is not None))


@dataclass(frozen=True, slots=True)
class _Verbs:
    """Verbs as one pattern, and the casefolded verbs a match must contain."""

    pattern: re.Pattern[str]
    needles: tuple[str, ...]

    def search(self, folded: str) -> bool:
        # the regex tries every verb at every position; text with none of them is told first
        return any(n in folded for n in self.needles) and self.pattern.search(folded) is not None


def _verbs(words: tuple[str, ...]) -> _Verbs | None:
    if not words:
        return None
    parts = [
        (r"(?<![a-z])" + re.escape(w.casefold()) + r"(?![a-z])") if w.isascii() else re.escape(w)
        for w in words
    ]
    needles = tuple(w.casefold() if w.isascii() else w for w in words)
    return _Verbs(re.compile("|".join(parts)), needles)


@lru_cache(maxsize=8)
def _patterns(rules: VerifierRules) -> tuple[_Verbs | None, _Verbs | None]:
    actions = rules.doc.actions
    return _verbs(actions.evidence_verbs), _verbs(actions.remediation_verbs)


def is_evidence_action(text: str, rules: VerifierRules) -> bool:
    """Names a way to gather evidence and no remediation."""
    gather, remedy = _patterns(rules)
    folded = unicodedata.normalize("NFKC", text).casefold()
    if remedy is not None and remedy.search(folded):
        return False
    return gather is not None and gather.search(folded)


def evidence_actions(value: Any, rules: VerifierRules) -> list[str]:
    """The executor's recommended actions that only gather evidence."""
    return [t for t in texts(value) if is_evidence_action(t, rules)]
