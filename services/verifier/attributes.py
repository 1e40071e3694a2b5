"""What a number measures: the attribute a text binds it to.

Why bind numbers: "current=92%, threshold=80%" holds two percentages, and a
claim that the usage is 80% is false although "80%" is in the excerpt. A
number is therefore read with the words right before it, in its own clause and
after the previous number: a ``key=value`` (or ``key: value``) field binds to
its key (so does a ``snake_key: value`` field such as ``Query_time: 8.7s``),
otherwise the nearest alias of an attribute (``rules/verifier-rules.json``
section ``attributes``: current / 当前 / usage / 使用率 / at, threshold / 阈值 /
limit, duration / 持续 / for / after, …) whose dimensions fit the number's
unit, otherwise a metric name carrying a digit ("p99 4.2s") or a word followed
by "of" or "is" ("p99 of 4.2s"), otherwise an alias or (for a plain count) any
word right after it ("a 3 s threshold", "23 waiting"). A key that is no alias
is its own attribute, so ``p99=4.2s`` and ``p99 of 4.2s`` bind alike. The
second number of a ratio ("46/50") is bound to the whole of the first one's
attribute ("active of"), never to the attribute itself. A number with none of
these is unbound (attribute ``""``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from services.verifier.rules_file import VerifierRules

WINDOW = 40  # characters before a number searched for what it measures
_DELIMITER = re.compile(r"[,;。、|\n()\[\]{}「」\"“”]")
# ``key=value``, ``key:value``, and ``snake_key: value`` (a field name, as in "Query_time: 8.7s";
# a plain word before ": " is prose, as in "exhausted: 50/50 active")
_KEY = re.compile(
    r"(?<![a-z0-9_.\-])(?:([a-z_][a-z0-9_.]*)(?:\s*=\s*|:)|([a-z][a-z0-9]*_[a-z0-9_]*):\s+)$"
)
_NAMED = re.compile(r"(?<![a-z0-9_.\-])([a-z][a-z0-9_]*)\s+(?:of|is|was|were)\s+$")
_METRIC = re.compile(r"(?<![a-z0-9_.\-])([a-z]+\d+[a-z0-9_]*)(?![a-z0-9_\-])")
# a count named after it: "23 waiting", "50/50 active" (plain numbers only)
_AFTER = re.compile(r"(?:/\d+(?:\.\d+)?)?[ \t]+([a-z_][a-z0-9_]{2,})(?![a-z0-9_\-])")
_NOT_NAMES = frozenset(("and", "the", "for", "out", "per", "with", "from", "than", "over", "into"))


@dataclass(frozen=True, eq=False)
class Binder:
    """Every alias of every attribute in one pattern, and what each alias names."""

    aliases: re.Pattern[str] | None
    owner: dict[str, tuple[str, frozenset[str]]]  # alias -> (attribute, dimensions)

    def _named(self, key: str, dimension: str) -> str:
        key = key.replace("_", " ")  # restart_count is "restart count"
        attribute, dimensions = self.owner.get(key, (key, frozenset()))
        return attribute if not dimensions or dimension in dimensions else key

    def bind(self, text: str, start: int, floor: int, dimension: str) -> tuple[str, int]:
        """The attribute of the number at ``start`` of ``text``, and where its name begins.

        ``floor`` is where the previous number ended; ``("", start)`` when unbound.
        """
        low = max(floor, start - WINDOW)
        cuts = [m.end() for m in _DELIMITER.finditer(text, low, start)]
        low = cuts[-1] if cuts else low
        window = text[low:start].casefold()
        key = _KEY.search(window)
        if key:
            group = 1 if key.group(1) else 2
            return self._named(key.group(group), dimension), low + key.start(group)
        best: tuple[str, int] | None = None
        for match in self.aliases.finditer(window) if self.aliases else ():
            attribute, dimensions = self.owner[re.sub(r"\s+", " ", match.group())]
            if not dimensions or dimension in dimensions:
                best = (attribute, low + match.start())
        if best is not None:
            return best
        metrics = list(_METRIC.finditer(window))
        named = metrics[-1] if metrics else _NAMED.search(window)
        if named:
            return self._named(named.group(1), dimension), low + named.start(1)
        return "", start

    def bind_after(self, text: str, end: int, dimension: str) -> tuple[str, int]:
        """The attribute named right after a number, and where that name ends.

        Any word names a plain count ("23 waiting"); a number with a unit only
        takes an alias that fits it ("a 3 s threshold"), never "92% for 5m".
        """
        after = _AFTER.match(text.casefold(), end)
        if after is None or after.group(1) in _NOT_NAMES:
            return "", end
        attribute, dimensions = self.owner.get(after.group(1), ("", frozenset()))
        if dimension != "plain" and (not attribute or (dimensions and dimension not in dimensions)):
            return "", end
        return self._named(after.group(1), dimension), after.end()


def _alias_pattern(alias: str) -> str:
    body = r"\s+".join(re.escape(part) for part in alias.split())
    return rf"(?<![a-z0-9_]){body}(?![a-z0-9_])" if alias.isascii() else body


@lru_cache(maxsize=8)
def binder(rules: VerifierRules) -> Binder:
    """The compiled attribute aliases of ``rules``."""
    owner: dict[str, tuple[str, frozenset[str]]] = {}
    for attribute, spec in rules.doc.attributes.items():
        for alias in (attribute.replace("_", " "), *spec.en, *spec.zh):
            key = " ".join(alias.casefold().split())
            owner.setdefault(key, (attribute, frozenset(spec.dimensions)))
    parts = [_alias_pattern(a) for a in sorted(owner, key=len, reverse=True)]
    return Binder(re.compile("|".join(parts)) if parts else None, owner)
