"""Substring tests that stand in for ``re.IGNORECASE`` searches of literal text.

A pattern of many literal phrases (or one literal per piece of text) matched with
``re.IGNORECASE`` costs the regex engine ≈ 0.5 ms per KB, mostly to learn that none
occurs. :func:`fold` makes text comparable with ``in``: lowercased, after the few
non-ASCII characters ``re.IGNORECASE`` matches to an ASCII letter (``K`` to ``k``,
``ſ`` to ``s``: asked of the regex engine itself, once per process) are made that
letter. For a literal whose characters are ASCII or have no case
(:func:`foldable`), a match in ``text`` implies ``fold(literal) in fold(text)``, so a
literal whose folded form is absent needs no search at all.
"""

from __future__ import annotations

import re
import string
import sys
import unicodedata
from functools import cache

# Character classes with no case: nothing but the character itself matches one.
_UNCASED = frozenset({"Lo", "Nd", "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Zs"})


def foldable(literal: str) -> bool:
    """Whether every match of ``literal`` shows in folded text (ASCII or caseless)."""
    return all(c.isascii() or unicodedata.category(c) in _UNCASED for c in literal)


def fold(text: str) -> str:
    """``text`` lowercased, with what ``re.IGNORECASE`` reads as an ASCII letter made it."""
    if not text.isascii():
        for char, letter in to_ascii():  # a few characters: a replace each beats translate
            if char in text:
                text = text.replace(char, letter)
    return text.lower()


@cache
def to_ascii() -> tuple[tuple[str, str], ...]:
    """Each non-ASCII character ``re.IGNORECASE`` matches to an ASCII letter, with it."""
    letters = {a: re.compile(a, re.IGNORECASE) for a in string.ascii_lowercase}
    pairs = []
    for code in range(0x80, sys.maxunicode + 1):
        char = chr(code)
        if char.lower() == char == char.upper():
            continue  # no case, nothing it could match but itself
        pairs += [(char, a) for a, one in letters.items() if one.fullmatch(char)]
    return tuple(pairs)


__all__ = ["fold", "foldable", "to_ascii"]
