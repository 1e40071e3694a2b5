"""Folded substring tests stand in for re.IGNORECASE searches without changing a result."""

from __future__ import annotations

import random
import re

import pytest

from services.composer.assertions import _GAP, _blank
from services.verifier.ignorecase import fold, foldable, to_ascii

WORDS = ["CPU", "is", "healthy", "İS", "ıs", "ſ", "\u212a", "K", "k", "no", "issue", "负载"]
WORDS += ["92%", "。", ". ", "\n", "σ", "ς", "Σ", "x.y", "(1)", "[e]", ""]


def _texts(seed: int, count: int, most: int) -> list[str]:
    pick = random.Random(seed)
    return [
        pick.choice(["", " "]).join(pick.choice(WORDS) for _ in range(pick.randint(0, most)))
        for _ in range(count)
    ]


def test_the_characters_that_match_ascii_letters_are_the_regex_engines() -> None:
    pairs = dict(to_ascii())
    assert pairs["\u212a"] == "k" and pairs["ſ"] == "s" and pairs["ı"] == "i"  # Kelvin sign
    for char, letter in pairs.items():
        assert re.fullmatch(letter, char, re.IGNORECASE)


def test_a_foldable_literal_found_by_the_regex_is_a_folded_substring() -> None:
    literals = [t for t in _texts(1, 300, 3) if t and foldable(t)]
    for text in _texts(2, 300, 10):
        for literal in literals:
            if re.search(re.escape(literal), text, re.IGNORECASE):
                assert fold(literal) in fold(text), (literal, text)


@pytest.mark.parametrize("literal", ["Σ", "é", "straße"])
def test_cased_non_ascii_literals_are_not_foldable(literal: str) -> None:
    assert not foldable(literal)


def test_blanking_skips_absent_pieces_with_the_same_result() -> None:
    def by_regex(text: str, pieces: list[str]) -> str:
        for piece in sorted({p for p in pieces if p}, key=len, reverse=True):
            text = re.sub(re.escape(piece), _GAP, text, flags=re.IGNORECASE)
        return text

    pieces = _texts(3, 400, 3)
    for i, text in enumerate(_texts(4, 400, 12)):
        chosen = pieces[i % 390 : i % 390 + 6]
        assert _blank(text, chosen) == by_regex(text, chosen)
