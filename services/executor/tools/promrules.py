"""What an alerting rule's PromQL says about its threshold and unit.

Why a small scanner and not a PromQL parser: the only question asked is "is this
expression ``<lhs> <op> <number>`` (or ``<number> <op> <rhs>``) at its top
level?". A comparison binds looser than arithmetic and tighter than ``and``,
``or`` and ``unless``, so a single comparison operator outside brackets, strings
and comments, with no set operator beside it, answers it exactly. ``A and B``
and ``A unless B`` return A's samples, so A is the condition read. Anything else
— ``or``, two comparisons, a vector on both sides, a ``bool`` modifier (the rule then
fires on every sample, 0 or 1) — leaves the threshold unknown with the reason,
because a guessed threshold would be a claim nobody saw.

The unit follows the Prometheus naming conventions only: a base-unit suffix of
the one metric the left-hand side reads (``_seconds``, ``_bytes``, ``_percent``,
``_ratio`` …, before ``_total``/``_sum``/``_bucket``), kept through functions
that do not change it, ``/s`` after ``rate``/``irate``/``deriv``. Arithmetic or
any other function makes the unit unknown.
"""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass

from services.executor.tools.promql_constant import constant

MAX_URL_CHARS = 8192
_FLIPPED = {"==": "==", "!=": "!=", ">=": "<=", "<=": ">=", ">": "<", "<": ">"}
_SET_OPERATORS = re.compile(r"\b(and|or|unless)\b")
_MODIFIER = re.compile(
    r"^(bool\b)?\s*((?:on|ignoring)\s*\([^)]*\))?\s*((?:group_left|group_right)\s*(?:\([^)]*\))?)?\s*"
)
_NUMBER = re.compile(
    r"^[+-]?(?:inf|nan|0x[0-9a-f]+|(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?)$", re.IGNORECASE
)
_IDENT = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
_LABEL_LISTS = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)")
_ARITHMETIC = re.compile(r"[-+*/%^]|\batan2\b")
# Number literals and durations (``1e9``, ``0x1f``, ``offset 1h30m``): not metric names.
_LITERALS = re.compile(
    r"(?<![A-Za-z0-9_:.])(?:(?:\d+(?:ms|[smhdwy]))+|0x[0-9a-f]+|(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?)",
    re.IGNORECASE,
)

BASE_UNITS = (
    "seconds",
    "bytes",
    "percent",
    "ratio",
    "celsius",
    "meters",
    "volts",
    "amperes",
    "joules",
    "grams",
    "hertz",
)
_COMPONENT_SUFFIXES = ("_total", "_sum", "_bucket", "_created")
_UNIT_KEEPING = frozenset(
    [
        "sum",
        "avg",
        "min",
        "max",
        "quantile",
        "topk",
        "bottomk",
        "abs",
        "ceil",
        "floor",
        "round",
        "clamp",
        "clamp_min",
        "clamp_max",
        "sort",
        "sort_desc",
        "last_over_time",
        "max_over_time",
        "min_over_time",
        "avg_over_time",
        "quantile_over_time",
        "histogram_quantile",
        "increase",
        "delta",
        "idelta",
        "label_replace",
        "label_join",
    ]
)
_PER_SECOND = frozenset({"rate", "irate", "deriv"})
_KEYWORDS = frozenset(
    [
        "by",
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
        "bool",
        "offset",
        "and",
        "or",
        "unless",
        "inf",
        "nan",
    ]
)


@dataclass(frozen=True, slots=True)
class Condition:
    """The comparison an alerting rule fires on, or why it is not known."""

    lhs: str | None
    comparison: str | None
    threshold: float | None
    note: str | None = None
    # What the rule compares with when that is another series, not a number:
    # ``compared with 0.9 * kube_pod_container_resource_limits{…}``.
    reference: str | None = None


def _unknown(note: str) -> Condition:
    return Condition(lhs=None, comparison=None, threshold=None, note=note)


def mask(expr: str) -> str:
    """``expr`` with comments dropped and strings blanked, bracket depth made visible.

    Every character inside brackets becomes ``\\x00`` (the brackets stay), every
    string character a space and every comment character ``\\x01``: what remains
    readable is the top level.
    """
    out: list[str] = []
    depth = 0
    quote: str | None = None
    escaped = False
    comment = False
    for ch in expr:
        if comment:
            comment = ch != "\n"
            out.append("\x01")
        elif quote:
            if escaped:
                escaped = False
            elif ch == "\\" and quote != "`":
                escaped = True
            elif ch == quote:
                quote = None
            out.append(" ")
        elif ch in "\"'`":
            quote = ch
            out.append(" ")
        elif ch == "#":
            comment = True
            out.append("\x01")
        elif ch in "([{":
            out.append(ch if depth == 0 else "\x00")
            depth += 1
        elif ch in ")]}":
            depth = max(depth - 1, 0)
            out.append(ch if depth == 0 else "\x00")
        else:
            out.append("\x00" if depth else ch)
    return "".join(out)


def strip_comments(expr: str) -> str:
    """``expr`` without its ``#`` comments (a ``#`` inside a string is kept)."""
    return "".join(c for c, m in zip(expr, mask(expr), strict=True) if m != "\x01")


def _strip_parens(expr: str) -> str:
    """``((x))`` → ``x`` when the outer brackets enclose the whole expression."""
    text = expr.strip()
    while text.startswith("(") and text.endswith(")"):
        masked = mask(text)
        if masked.index(")") != len(text) - 1:
            break
        text = text[1:-1].strip()
    return text


def _operators(masked: str) -> list[tuple[int, str]]:
    """Top-level comparison operators as (position, operator)."""
    found: list[tuple[int, str]] = []
    i = 0
    while i < len(masked):
        two = masked[i : i + 2]
        if two in ("==", "!=", ">=", "<="):
            found.append((i, two))
            i += 2
        elif masked[i] in "<>":
            found.append((i, masked[i]))
            i += 1
        elif two in ("=~", "!~"):
            i += 2
        else:
            i += 1
    return found


def _literal(text: str) -> float | None:
    number = _strip_parens(text)
    if not _NUMBER.match(number):
        return None
    return float(int(number, 16)) if number.lower().lstrip("+-").startswith("0x") else float(number)


MAX_REFERENCE_CHARS = 120


def _reference(expr: str) -> str:
    """``compared with <expr>``, whitespace collapsed and trimmed to about 120 characters."""
    text = " ".join(_strip_parens(expr).split())
    if len(text) > MAX_REFERENCE_CHARS:
        text = text[: MAX_REFERENCE_CHARS - 1].rstrip() + "…"
    return f"compared with {text}"


def _kept_operand(text: str, masked: str) -> str:
    """``A and B`` and ``A unless B`` return A's samples: the condition that fires is A's.

    So a multiwindow burn-rate rule (``short > 14.4 * 0.001 and long > 14.4 * 0.001``)
    fires on its first comparison, with that comparison's value. ``or`` returns either
    side's samples, so an expression with a top-level ``or`` is left whole.
    """
    operators = list(_SET_OPERATORS.finditer(masked))
    if not operators or any(m.group(1) == "or" for m in operators):
        return text
    return _strip_parens(text[: operators[0].start()])


def _one_comparison(text: str, masked: str) -> tuple[int, str] | str:
    """Where the expression's one comparison is and its operator, or why there is not one
    (``masked`` is ``mask(text)``)."""
    if not text:
        return "the rule has no expression"
    if _SET_OPERATORS.search(masked):
        return "the expression combines conditions with or"
    ops = _operators(masked)
    if not ops:
        return "the expression has no comparison"
    if len(ops) > 1:
        return "the expression has more than one comparison"
    return ops[0]


def parse_condition(expr: str) -> Condition:
    """The rule's ``<lhs> <op> <threshold>``, normalised so the threshold is on the right."""
    whole = _strip_parens(strip_comments(expr))
    masked = mask(whole)
    text = _kept_operand(whole, masked)
    found = _one_comparison(text, masked if text is whole else mask(text))
    if isinstance(found, str):
        return _unknown(found)
    pos, op = found
    left, right = text[:pos].strip(), text[pos + len(op) :].strip()
    modifiers = _MODIFIER.match(right)
    assert modifiers is not None  # every group is optional: it always matches
    if modifiers.group(1):
        return _unknown("the comparison uses bool, so the rule fires on every sample")
    right = right[modifiers.end() :]
    if (threshold := constant(right)) is not None:
        return Condition(lhs=left, comparison=op, threshold=threshold)
    if (threshold := constant(left)) is not None:
        return Condition(lhs=right, comparison=_FLIPPED[op], threshold=threshold)
    note = "the comparison is between two vectors, not with a number"
    return Condition(
        lhs=None, comparison=None, threshold=None, note=note, reference=_reference(right)
    )


def _metric_unit(name: str) -> str | None:
    base = name
    for suffix in _COMPONENT_SUFFIXES:
        if base.endswith(suffix):
            base = base[: -len(suffix)]
            break
    return next((u for u in BASE_UNITS if base.endswith(f"_{u}")), None)


def measured(expr: str) -> str:
    """``expr`` with comments, strings, selectors, ranges and label lists blanked: what it
    measures (metric and function names, operators, numbers), never a label's value."""
    return _LABEL_LISTS.sub(" ", re.sub(r"\{[^{}]*\}|\[[^\[\]]*\]", " ", _blank_strings(expr)))


def unit_of(lhs: str) -> str | None:
    """The unit of ``lhs`` by the naming conventions of the one metric it reads."""
    # Look inside brackets too, but never inside strings, selectors, ranges or
    # label lists (``by (le)`` names a label, not a metric).
    flat = _LITERALS.sub(" ", measured(lhs))
    if _ARITHMETIC.search(flat):
        return None
    metrics: list[str] = []
    per_second = False
    for match in _IDENT.finditer(flat):
        word, rest = match.group(0), flat[match.end() :].lstrip()
        if word in _KEYWORDS or _NUMBER.match(word):
            continue
        if rest.startswith("("):
            if word in _PER_SECOND:
                per_second = True
            elif word not in _UNIT_KEEPING:
                return None
            continue
        metrics.append(word)
    if len(set(metrics)) != 1:
        return None
    unit = _metric_unit(metrics[0])
    if "histogram_quantile" in flat:
        # The rate of the buckets only weights the distribution: the quantile keeps
        # the unit of the observations.
        return unit if metrics[0].endswith("_bucket") else None
    if per_second:
        return f"{unit}/s" if unit else "/s"
    return unit


def _blank_strings(expr: str) -> str:
    """``expr`` without comments, every string character blanked."""
    text = strip_comments(expr)
    masked = mask(text)
    return "".join(c if m != " " or c.isspace() else " " for c, m in zip(text, masked, strict=True))


def generator_expr(url: str) -> str | None:
    """The expression of an alert's ``generatorURL`` (``…/graph?g0.expr=…``), if it has one.

    Alertmanager passes the URL on unchanged, so an alert that arrives without a
    Prometheus to ask still names the comparison it fired on.
    """
    query = urllib.parse.urlsplit(url[:MAX_URL_CHARS]).query
    values = urllib.parse.parse_qs(query).get("g0.expr")
    return values[0] if values and values[0].strip() else None
