"""Strict excerpt support: is an executor's ``evidence_excerpt`` really in the ref text?

Why strict: a model that paraphrases "current=92%" as "current=93%" or drops a
"not" produces text that fuzzy similarity scores ~90, yet the claim is false.
So acceptance is exact after a normalisation that only removes presentation
noise (NFKC, casefold, typographic quote/dash folding, whitespace runs):

* the excerpt is a contiguous substring of the ref text, or
* it is parts joined by an ellipsis, each part found in order, none trivial,
  and no omitted gap cuts a negation off the clause of the part after it, or
* it is several fields of the item (split at field separators such as ", "
  and "; ") found in order, where only whole ref fields may be left out:
  "HighCPUUsage, current=92%, duration=25m" is supported by "HighCPUUsage,
  state=firing, current=92%, threshold=80%, duration=25m". Reordered fields
  are not, since positional fields would swap meaning.

Matches must also sit on token boundaries ("current=9" is not in
"current=92%", "current=4" is not in "current=4.2s") and must not cut a
negation off the start of their clause ("available" and "currently available"
are not supported by "is not currently available"). Negation cues and
their exemptions come from the shared lexicon (``rules/negation.json``), so
"非常高" is no negation here either. Clauses end at the
configured separators, so "request timed out" is still supported by
"connection is not available, request timed out".
``difflib`` only builds the repair hint for a rejected excerpt; it never accepts.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from services.common.negation import Negations, default_negations

_NON_SPACE = re.compile(r"\S+")
_HINT_NOTE = "a repair hint only; support requires an exact normalised match"
# Scripts written without spaces start here; their characters never form words
# that a boundary could cut.
_UNSPACED_SCRIPTS_START = 0x2E80


class ExcerptParameters(BaseModel):
    """The ``evidence.excerpt_supported`` parameters from the rules file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    min_excerpt_chars: int = Field(ge=1)
    min_part_chars: int = Field(ge=1)
    ellipsis_markers: tuple[str, ...] = Field(min_length=1)
    wrapping_quotes: tuple[tuple[str, str], ...] = ()
    trailing_punctuation: str = ""
    fold_characters: dict[str, str] = Field(default_factory=dict)
    require_token_boundaries: bool = True
    clause_separators: str = ",;:.!?()[]"
    field_separators: str = ""
    hint_max_chars: int = Field(default=160, ge=16)

    @field_validator("fold_characters")
    @classmethod
    def _single_characters(cls, value: dict[str, str]) -> dict[str, str]:
        bad = [key for key in value if len(key) != 1]
        if bad:
            raise ValueError(f"fold_characters keys must be single characters, got {bad}")
        return value

    @field_validator("ellipsis_markers")
    @classmethod
    def _non_blank_markers(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if any(not marker.strip() for marker in value):
            raise ValueError("ellipsis_markers must not be blank")
        return value


def _is_word_char(char: str) -> bool:
    return char.isalnum() and ord(char) < _UNSPACED_SCRIPTS_START


def _bounded(text: str, index: int, end: int, part: str) -> bool:  # noqa: PLR0911  # each token-boundary case, on both sides of the match, answers at once
    """The match ``text[index:end] == part`` neither starts nor ends inside a token.

    Numbers count as one token across a decimal or thousands separator, so
    "2s" is not bounded inside "4.2s" and "current=4" not inside "current=4.2s".
    """
    if index > 0:
        before, first = text[index - 1], part[0]
        if _is_word_char(before) and _is_word_char(first):
            return False
        if first.isdigit() and before in ".," and index >= 2 and text[index - 2].isdigit():
            return False
        if first in ".," and len(part) > 1 and part[1].isdigit() and before.isdigit():
            return False
    if end < len(text):
        last, after = part[-1], text[end]
        if _is_word_char(last) and _is_word_char(after):
            return False
        if last.isdigit() and after in ".," and end + 1 < len(text) and text[end + 1].isdigit():
            return False
        if last in ".," and len(part) > 1 and part[-2].isdigit() and after.isdigit():
            return False
    return True


class ExcerptMatcher:
    """Normalises texts and decides strict support; built once per rule set."""

    def __init__(self, params: ExcerptParameters, negations: Negations | None = None) -> None:
        self.params = params
        self._negations = negations if negations is not None else default_negations()
        self._boundaries = params.require_token_boundaries
        self._folds = str.maketrans(params.fold_characters)
        self._fold_ascii = any(key.isascii() for key in params.fold_characters)
        markers = sorted(
            {self.normalize(m) for m in params.ellipsis_markers}, key=len, reverse=True
        )
        alternatives = "|".join(re.escape(m) for m in markers)
        self._ellipsis = re.compile(f"(?:{alternatives})+")
        self._trailing_ellipsis = re.compile(f"(?:{alternatives})+$")
        self._quotes = tuple(
            (self.normalize(open_), self.normalize(close))
            for open_, close in params.wrapping_quotes
        )
        self._trailing = self.normalize(params.trailing_punctuation).replace(" ", "")
        fields = self.normalize(params.field_separators).replace(" ", "")
        self._field_separators = fields
        self._field_split = re.compile(f"\\s*[{re.escape(fields)}]\\s*") if fields else None
        separators = self.normalize(params.clause_separators).replace(" ", "")
        # greedy: matches from a position through the last separator before the end
        self._through_last_separator = re.compile(
            f".*[{re.escape(separators)}]" if separators else "(?!)", re.DOTALL
        )

    def normalize(self, text: str) -> str:
        """NFKC, casefold, fold typographic variants, collapse whitespace, strip."""
        # NFKC leaves ASCII alone and casefold is lower() there: the common fast path
        ascii_in = text.isascii()
        folded = text.lower() if ascii_in else unicodedata.normalize("NFKC", text).casefold()
        if not folded.isascii():
            # casefold can leave sequences NFKC would compose differently
            folded = unicodedata.normalize("NFKC", folded).translate(self._folds)
        elif self._fold_ascii:
            folded = folded.translate(self._folds)
        return " ".join(folded.split())

    def supports(self, excerpt_norm: str, ref: str) -> bool:
        """True when the normalised excerpt is strictly supported by the normalised ref."""
        if self._supported(excerpt_norm, ref):
            return True
        unwrapped = self._unwrap(excerpt_norm)
        return unwrapped != excerpt_norm and self._supported(unwrapped, ref)

    def is_supported(self, excerpt: str, ref_text: str) -> bool:
        """One-off convenience: normalise both sides and decide."""
        return self.supports(self.normalize(excerpt), self.normalize(ref_text))

    def hint(self, excerpt: str, ref_text: str) -> dict[str, Any]:
        """Closest ref segment for a rejected excerpt, so the executor can repair it.

        Aligned on whitespace tokens (cheap even for long refs): the window spans
        the excerpt's matching tokens plus room for its unmatched edge tokens,
        so a changed digit, unit or name shows in place.
        """
        tokens = list(_NON_SPACE.finditer(ref_text))
        ref_words = [t.group().lower() for t in tokens]
        exc_words = excerpt.lower().split()
        matcher = difflib.SequenceMatcher(None, ref_words, exc_words, autojunk=False)
        blocks = [block for block in matcher.get_matching_blocks() if block.size]
        limit = self.params.hint_max_chars
        if not blocks:
            return {
                "closest_ref_text": ref_text[:limit],
                "token_similarity": 0.0,
                "note": _HINT_NOTE,
            }
        first, last = blocks[0], blocks[-1]
        # unmatched excerpt tokens at either edge get twice their count of ref
        # tokens, since the excerpt may also have dropped some in between
        head, tail = first.b, len(exc_words) - last.b - last.size
        begin = max(0, first.a - 2 * head)
        end = min(len(tokens), last.a + last.size + 2 * tail)
        window = ref_text[tokens[begin].start() : tokens[max(begin, end - 1)].end()]
        longest = max(blocks, key=lambda block: block.size)
        common = ref_text[tokens[longest.a].start() : tokens[longest.a + longest.size - 1].end()]
        window_words = ref_words[begin:end]
        similarity = difflib.SequenceMatcher(None, window_words, exc_words, autojunk=False).ratio()
        return {
            "closest_ref_text": window[:limit],
            "longest_common_segment": common[:limit],
            "token_similarity": round(similarity, 3),
            "note": _HINT_NOTE,
        }

    # -- strict support ---------------------------------------------------

    def _supported(self, excerpt: str, ref: str) -> bool:
        if len(excerpt) < self.params.min_excerpt_chars:
            return False
        if self._find(excerpt, ref, 0) >= 0:
            return True
        if self._ellipsis.search(excerpt) is not None:
            parts = [part.strip() for part in self._ellipsis.split(excerpt)]
            return self._in_order(ref, [part for part in parts if part], fields=False)
        if self._field_split is not None:
            fields = self._field_split.split(excerpt.strip(self._field_separators + " "))
            return self._in_order(ref, fields, fields=True)
        return False

    def _in_order(self, ref: str, parts: list[str], *, fields: bool) -> bool:
        """Parts found left to right, none trivial.

        For fields (parts split at field separators, the executor merging
        several fields of one item) every part but the first must start a ref
        field and every part but the last must end one, so only whole fields
        are left out; a changed value inside a field can never match.
        """
        if len(parts) < (2 if fields else 1) or any(
            len(part) < self.params.min_part_chars for part in parts
        ):
            return False
        position = 0
        for number, part in enumerate(parts):
            aligned_start = fields and number > 0
            aligned_end = fields and number < len(parts) - 1
            start = self._find(part, ref, position, aligned_start, aligned_end)
            if start < 0:
                return False
            position = start + len(part)
        return True

    def _unwrap(self, excerpt: str) -> str:
        """Drop one pair of wrapping quotes and the sentence punctuation a model added.

        A trailing period goes whether it sits outside or inside the quotes;
        an ellipsis is never cut, since it marks omitted text.
        """
        text = self._drop_trailing(excerpt)
        for open_, close in self._quotes:
            if (
                len(text) > len(open_) + len(close)
                and text.startswith(open_)
                and text.endswith(close)
            ):
                return self._drop_trailing(text[len(open_) : len(text) - len(close)].strip())
        return text

    def _drop_trailing(self, text: str) -> str:
        if text and text[-1] in self._trailing and self._trailing_ellipsis.search(text) is None:
            return text[:-1].rstrip()
        return text

    def _find(
        self, part: str, text: str, start: int, field_start: bool = False, field_end: bool = False
    ) -> int:
        """First bounded, un-negated occurrence at or after ``start``; -1 if none.

        ``field_start`` / ``field_end`` also require the occurrence to begin
        right after / end right before a field separator (or the text's edge).
        """
        index = text.find(part, start)
        while index >= 0:
            end = index + len(part)
            if (
                (not self._boundaries or _bounded(text, index, end, part))
                and (not field_start or self._field_edge(text[:index].rstrip()[-1:]))
                and (not field_end or self._field_edge(text[end:].lstrip()[:1]))
                and not self._negated_before(text, index, start)
            ):
                return index
            index = text.find(part, index + 1)
        return -1

    def _field_edge(self, char: str) -> bool:
        return not char or char in self._field_separators

    def _negated_before(self, text: str, index: int, floor: int) -> bool:
        """A negation earlier in the clause a match starts in would be cut off.

        Negation precedes what it negates, so only the clause text before the
        match (and after ``floor``, the end of the previous kept part) matters.
        """
        if index <= floor:
            return False
        clause = self._through_last_separator.match(text, floor, index)
        start = clause.end() if clause is not None else floor
        return start < index and self._negations.in_text(text, start, index)
