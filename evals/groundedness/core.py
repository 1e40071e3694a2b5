"""The corpus' building blocks: invented names, number wordings, kinds, wordings, edits.

A kind is one sort of evidence item (a Kafka lag alert, an nginx access log
line). ``make`` draws the concrete values of one instance, ``view`` turns them
into every string a wording may use, and ``evidence`` turns them into a tool
invocation through the executor's own tools. A wording is one claim as a model
writes it, in one language; its edits re-render it with one value changed, or
change its words.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

Values = dict[str, Any]
View = dict[str, str]

# Syllables of invented names: none of them spells a word the repository uses.
_ONSETS = ("br", "dr", "fl", "gr", "kl", "qu", "sk", "tr", "v", "z", "th", "pl", "sn", "m", "w")
_NUCLEI = ("a", "e", "i", "o", "u", "ae", "oa", "y")
_CODAS = ("lm", "rk", "nd", "sk", "rt", "mb", "x", "ll", "th", "ng", "sp", "ft")


class Names:
    """Fresh invented words, never repeated within one corpus and not in ``forbidden``."""

    def __init__(self, rng: random.Random, forbidden: frozenset[str] = frozenset()) -> None:
        self._rng = rng
        self._used: set[str] = set()
        self._forbidden = forbidden

    def word(self) -> str:
        while True:
            r = self._rng
            w = (
                r.choice(_ONSETS)
                + r.choice(_NUCLEI)
                + r.choice(_CODAS)
                + r.choice(_NUCLEI[:5])
                + r.choice(("n", "r", "l", "s", "t", "m"))
            )
            if w not in self._used and w not in self._forbidden and len(w) >= 6:
                self._used.add(w)
                return w

    def name(self, suffix: str = "", prefix: str = "") -> str:
        return f"{prefix}{self.word()}{suffix}"

    def invented(self, text: str) -> list[str]:
        """The invented words inside ``text``, in order."""
        return [w for w in re.findall(r"[a-z]+", text) if w in self._used]

    def swap(self, value: str) -> str:
        """``value`` with its first invented word replaced by a fresh one: same shape."""
        for word in self.invented(value):
            return value.replace(word, self.word(), 1)
        head, dash, tail = value.rpartition("-")
        if not dash:
            raise ValueError(f"no invented word in {value!r}")
        alphabet = "bcdfghjklmnpqrstvwxz2456789"
        while True:
            fresh = "".join(self._rng.choice(alphabet) for _ in tail)
            if fresh != tail:
                return f"{head}-{fresh}"


@dataclass(frozen=True, slots=True)
class Wording:
    """One true claim template: its text, excerpt, asserted fields and edits.

    ``excerpt`` is a ``"; "`` segment index of the ref text, ``None`` for the
    whole text, or a format string over the view. ``states`` are
    ``"field=key"`` or ``"field=key:unit"``. ``edits`` use the edit grammar of
    :func:`apply_edit`.
    """

    lang: str
    text: str
    states: tuple[str, ...]
    edits: tuple[str, ...]
    excerpt: int | str | None = 0
    claim_type: str = "observation"


@dataclass(frozen=True, slots=True)
class Kind:
    name: str
    source: str  # which tool format the evidence is in
    query_en: str
    query_zh: str
    make: Callable[[random.Random, Names], Values]
    view: Callable[[Values], View]
    evidence: Callable[[str, Values], dict[str, Any]]
    wordings: tuple[Wording, ...]
    raw_path: str = "$.alerts[0]"
    causes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    conclusions: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    entity_suffix: Mapping[str, str] = field(default_factory=dict)


# -- number wordings -------------------------------------------------------------


def commas(n: int) -> str:
    return f"{n:,}"


def plain(x: float) -> str:
    """``97`` for 97.0, ``0.0512`` for 0.0512: no float noise."""
    return f"{x:.6g}"


def pct(ratio: float, digits: int = 2) -> str:
    """0.0512 → ``5.12%``."""
    return f"{ratio * 100:.{digits}f}".rstrip("0").rstrip(".") + "%"


def wan(n: int) -> str:
    """26000 → ``2.6 万``."""
    return f"{n / 10000:g} 万"


def kilo(n: int) -> str:
    """3100 → ``3.1k``."""
    return f"{n / 1000:g}k"


def hms_en(seconds: int) -> str:
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    parts = [(h, "hour"), (m, "minute"), (s, "second")]
    words = [f"{n} {u}{'s' if n != 1 else ''}" for n, u in parts if n]
    return " ".join(words) if words else "0 seconds"


def hms_zh(seconds: int) -> str:
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    parts = [(h, "小时"), (m, "分"), (s, "秒")]
    words = [f"{n} {u}" for n, u in parts if n]
    if h and m and not s:
        words[-1] = f"{m} 分钟"
    if not h and m and not s:
        words = [f"{m} 分钟"]
    return " ".join(words)


def humanize_duration(seconds: float) -> str:
    """Prometheus' ``humanizeDuration``: ``1m 7.2s``, ``3h 12m 0s``."""
    if seconds < 60:
        return f"{seconds:.4g}s"
    total = int(seconds)
    frac = seconds - total
    d, rest = divmod(total, 86400)
    h, rest = divmod(rest, 3600)
    m, s = divmod(rest, 60)
    sec = f"{s + frac:.4g}s" if frac else f"{s}s"
    if d:
        return f"{d}d {h}h {m}m {sec}"
    if h:
        return f"{h}h {m}m {sec}"
    return f"{m}m {sec}"


# -- edits -----------------------------------------------------------------------

EDIT_CLASSES = (
    "number_changed",
    "number_swapped_within_item",
    "unit",
    "entity",
    "comparison",
    "negation",
    "time_window",
    "unsupported_cause",
    "unsupported_conclusion",
)

_CLASS_OF = {
    "num": "number_changed",
    "swap": "number_swapped_within_item",
    "unit": "unit",
    "ent": "entity",
    "cmp": "comparison",
    "neg": "negation",
    "time": "time_window",
    "cause": "unsupported_cause",
    "concl": "unsupported_conclusion",
}
SUB = "sub"

GENERIC_CAUSES = {
    "en": (
        "a connection leak in the service",
        "the deployment rolled out an hour earlier",
        "a misconfigured resource limit",
        "a noisy neighbour on the same node",
    ),
    "zh": ("服务中的连接泄漏", "一小时前的发布", "资源上限配置错误", "同节点上其他负载的干扰"),
}
GENERIC_CONCLUSIONS = {
    "en": (
        "the service needs more replicas",
        "the capacity is large enough and nothing needs to change",
        "this is the only problem in the cluster",
        "the issue will resolve itself within the hour",
    ),
    "zh": (
        "服务需要扩容",
        "容量已经足够，无需处理",
        "这是集群中唯一的问题",
        "问题会在一小时内自行恢复",
    ),
}
_CAUSE_FORMS = {
    "en": ("{t}, caused by {x}.", "{t} because of {x}.", "{t}; the root cause is {x}."),
    "zh": ("{t}，原因是{x}。", "{t}，这是由{x}导致的。", "{t}，根因是{x}。"),
}
_CONCLUSION_FORMS = {
    "en": ("{t}, which proves {x}.", "{t}, so {x}.", "{t}; this shows {x}."),
    "zh": ("{t}，说明{x}。", "{t}，因此{x}。", "{t}，可见{x}。"),
}


def bump(value: Any, rng: random.Random) -> Any:
    """A clearly different value of the same shape (integer step, decimals kept)."""
    if isinstance(value, bool):
        raise TypeError("not a number")
    if isinstance(value, int):
        step = 1
        while value and value % (step * 10) == 0 and step < 10_000:
            step *= 10
        units = max(value // step, 1)
        delta = max(1, round(units * rng.uniform(0.22, 0.6)))
        if rng.random() < 0.5 and units - delta > 0:
            return (units - delta) * step
        return (units + delta) * step
    if isinstance(value, float):
        text = plain(value)
        decimals = len(text.split(".")[1]) if "." in text else 0
        for _ in range(50):
            factor = rng.uniform(1.25, 1.7) if rng.random() < 0.6 else rng.uniform(0.45, 0.8)
            new = round(value * factor, decimals)
            if new != value and new > 0:
                return new
        return round(value + 10**-decimals * 3, decimals)
    raise TypeError(f"cannot bump {value!r}")


def shift_time(value: Any, rng: random.Random) -> Any:
    """A window (minutes) no evidence here supports, or a clock time moved earlier."""
    if isinstance(value, int):
        # Only longer: a shorter "for more than N minutes" would still be true, and
        # even the longest alert here has not been active for six hours.
        return rng.choice([w for w in (360, 720, 1440) if w > value])
    if isinstance(value, str) and len(value) == 5 and value[2] == ":":
        hours = (int(value[:2]) + rng.choice((-3, -2, -1))) % 24
        return f"{hours:02d}{value[2:]}"
    raise TypeError(f"cannot shift {value!r}")


@dataclass(frozen=True, slots=True)
class Edit:
    edit_class: str
    text: str
    spec: str


def render(kind: Kind, wording: Wording, values: Values) -> str:
    return wording.text.format(**kind.view(values))


def apply_edit(
    spec: str,
    kind: Kind,
    wording: Wording,
    values: Values,
    *,
    rng: random.Random,
    names: Names,
) -> Edit:
    """One edit of a true claim.

    Grammar: ``num:KEY`` (a value bumped), ``swap:K1:K2``, ``ent:KEY`` (a fresh
    name of the same shape), ``time:KEY`` (window or clock time moved),
    ``unit|cmp|neg:OLD>NEW`` (words replaced in the true text; both sides are
    format strings over the view), ``sub:CLASS:OLD>NEW`` (the same, for any
    class), ``cause`` and ``concl`` (an unsupported cause or conclusion appended).
    """
    head, _, rest = spec.partition(":")
    if head == SUB:
        edit_class, _, rest = rest.partition(":")
        head = "unit"
    else:
        edit_class = _CLASS_OF[head]
    true_text = render(kind, wording, values)
    lang = wording.lang
    if head in ("num", "swap", "ent", "time"):
        changed = dict(values)
        keys = rest.split(":")
        if head == "num":
            others = {str(v) for k, v in values.items() if k != keys[0]}
            new = bump(values[keys[0]], rng)
            while str(new) in others or new == values[keys[0]]:
                new = bump(new, rng)
            changed[keys[0]] = new
        elif head == "swap":
            changed[keys[0]], changed[keys[1]] = values[keys[1]], values[keys[0]]
        elif head == "ent":
            changed[keys[0]] = names.swap(str(values[keys[0]]))
        else:
            changed[keys[0]] = shift_time(values[keys[0]], rng)
        text = render(kind, wording, changed)
    elif head in ("unit", "cmp", "neg"):
        view = kind.view(values)
        old, new = (part.format(**view) for part in rest.split(">", 1))
        if old not in true_text:
            raise ValueError(f"{kind.name}: {old!r} not in {true_text!r}")
        text = true_text.replace(old, new, 1)
    else:
        pool = kind.causes if head == "cause" else kind.conclusions
        fallback = GENERIC_CAUSES if head == "cause" else GENERIC_CONCLUSIONS
        phrase = rng.choice(pool.get(lang) or fallback[lang])
        forms = _CAUSE_FORMS if head == "cause" else _CONCLUSION_FORMS
        base = true_text.rstrip("。.")
        text = rng.choice(forms[lang]).format(t=base, x=phrase)
    if text == true_text:
        raise ValueError(f"{kind.name}: edit {spec} did not change {true_text!r}")
    return Edit(edit_class, text, spec)
