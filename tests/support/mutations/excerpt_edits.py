"""Family B, excerpt edits: one fact of a verbatim excerpt changed. Must reject.

A mutant is kept only when its normalised text differs from the original and
is not found in the ref text, so it is really false.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from datetime import datetime, timedelta

from tests.support import demo_evidence as demo
from tests.support.mutations.base import (
    Maker,
    Outcome,
    noise,
    norm,
    pick,
    ref_text,
    refs_of,
    shorten,
)

_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\d.])")
_UNIT = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(\s?)(ms|s|%|GB|MB|m)(?![A-Za-z0-9])")
_UNIT_SWAPS: dict[str, tuple[str, ...]] = {
    "ms": ("s", "us", "min"),
    "s": ("ms", "m"),
    "%": ("\u2030",),
    "GB": ("MB", "TB"),
    "MB": ("GB", "KB"),
    "m": ("h", "s", "ms"),
}
_ENTITIES: tuple[tuple[str, str], ...] = (
    ("pod", r"pod-[a-z]+-service-[0-9a-z]+-[0-9a-z]+"),
    ("service", r"(?<![\w-])[a-z]+-service(?![\w-])"),
    ("alert", r"\b(?:HighCPUUsage|HighMemoryUsage|SlowResponse)\b"),
    ("level", r"\b(?:ERROR|WARN|INFO)\b"),
    ("runbook", r"(?<=Runbook )[a-z-]+"),
)
_TIMESTAMP = re.compile(r"(\d{4}-\d{2}-\d{2})([ T])(\d{2}:\d{2}:\d{2})")

Mutator = Callable[[random.Random, str, list[str]], str | None]


def _digit(rng: random.Random, base: str, _: list[str]) -> str | None:
    positions = [i for i, c in enumerate(base) if c.isdigit()]
    if not positions:
        return None
    i = rng.choice(positions)
    return base[:i] + rng.choice([d for d in "0123456789" if d != base[i]]) + base[i + 1 :]


def _number(rng: random.Random, base: str, _: list[str]) -> str | None:
    matches = list(_NUMBER.finditer(base))
    if not matches:
        return None
    m = rng.choice(matches)
    text = m.group()
    if "." in text:
        decimals = len(text.split(".")[1])
        step = rng.choice((0.1, 0.2, 0.5, 1.0, 2.0)) * rng.choice((-1, 1))
        new = f"{abs(float(text) + step):.{decimals}f}"
    else:
        value = int(text)
        new = str(rng.choice((value + 1, abs(value - 1), value * 10, value + rng.randint(2, 99))))
    return None if new == text else base[: m.start()] + new + base[m.end() :]


def _unit(rng: random.Random, base: str, _: list[str]) -> str | None:
    matches = list(_UNIT.finditer(base))
    if not matches:
        return None
    m = rng.choice(matches)
    unit = rng.choice(_UNIT_SWAPS[m.group(3)])
    return base[: m.start(3)] + unit + base[m.end(3) :]


def _entity(rng: random.Random, base: str, same_output: list[str]) -> str | None:
    options: list[tuple[re.Match[str], list[str]]] = []
    for _, pattern in _ENTITIES:
        values = list(dict.fromkeys(v for text in same_output for v in re.findall(pattern, text)))
        for m in re.finditer(pattern, base):
            others = [v for v in values if v != m.group()]
            if others:
                options.append((m, others))
    if not options:
        return None
    m, others = rng.choice(options)
    return base[: m.start()] + rng.choice(others) + base[m.end() :]


def _negation(rng: random.Random, base: str, _: list[str]) -> str | None:
    removable = list(re.finditer(r"\b(?:not|no|never)\s+", base, re.IGNORECASE))
    if removable and rng.random() < 0.6:
        m = rng.choice(removable)
        return base[: m.start()] + base[m.end() :]
    verbs = list(re.finditer(r"\b(?:is|was|are|were|has|have|did|does|can)\s+", base))
    if verbs and rng.random() < 0.5:
        m = rng.choice(verbs)
        return base[: m.end()] + "not " + base[m.end() :]
    tokens = base.split(" ")
    if len(tokens) < 2:
        return None
    i = rng.randrange(1, len(tokens))
    return " ".join([*tokens[:i], rng.choice(("not", "no", "never")), *tokens[i:]])


def _timestamp(rng: random.Random, base: str, _: list[str]) -> str | None:
    matches = list(_TIMESTAMP.finditer(base))
    if not matches:
        return None
    m = rng.choice(matches)
    moment = datetime.strptime(f"{m.group(1)} {m.group(3)}", "%Y-%m-%d %H:%M:%S")
    seconds = rng.choice((1, 2, 30, 60, 300, 3600, 86400)) * rng.choice((-1, 1))
    shifted = moment + timedelta(seconds=seconds)
    new = shifted.strftime(f"%Y-%m-%d{m.group(2)}%H:%M:%S")
    return base[: m.start()] + new + base[m.end() :]


def _excerpt_edit(mutate: Mutator) -> Maker:
    def make(rng: random.Random, s: demo.Scenario) -> Outcome:
        _, binding = pick(rng, s)
        ref = ref_text(s, binding)
        base = rng.choice((binding["evidence_excerpt"], ref, shorten(rng, ref, 3) or ref))
        same_output = list(refs_of(s, binding["source_invocation_id"]).values())
        mutated = mutate(rng, base, same_output)
        if mutated is None or norm(mutated) == norm(base) or norm(mutated) in norm(ref):
            return None
        binding["evidence_excerpt"] = noise(rng, mutated)
        return ("evidence.excerpt_supported",), f"{base!r} -> {mutated!r}"

    return make


B_MAKERS: tuple[tuple[str, Maker], ...] = (
    ("digit", _excerpt_edit(_digit)),
    ("number", _excerpt_edit(_number)),
    ("unit", _excerpt_edit(_unit)),
    ("entity", _excerpt_edit(_entity)),
    ("negation", _excerpt_edit(_negation)),
    ("timestamp", _excerpt_edit(_timestamp)),
)
