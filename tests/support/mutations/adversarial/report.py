"""Run the adversarial suite and tabulate catch and false-reject rates per class.

Why a table per class: one overall rate hides a class that slips through. A
claim edit is *caught* when its claim is not SUPPORTED and the round is not
PASS; it *passes* when the round is PASS. A benign variant is *false-rejected*
when its round is not PASS. An answer edit is caught when the answer guard
flags it; the answer as composed must pass the guard.

A true shape that does not pass as written is counted as a false reject of its
own source (``paraphrase``) and is not mutated: an edit of a claim that fails
anyway proves nothing. ``python -m tests.support.mutations.adversarial`` prints the table.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache

from tests.support import demo_evidence as demo
from tests.support.mutations.adversarial import answers
from tests.support.mutations.adversarial.edits import BENIGN, FALSIFYING
from tests.support.mutations.adversarial.judge import judge, judge_output
from tests.support.mutations.adversarial.shapes import Shape, ref_texts, shapes
from tracebound.events import ComposerInput

SEED = 20260708
PARAPHRASE = "paraphrase"
ANSWER_FALSIFYING = ("cause_insertion", "version_insertion")
ANSWER_BENIGN = ("answer_as_composed",)


@dataclass(frozen=True)
class Outcome:
    """One case: its class, the shape it came from, the text judged, and how it fared."""

    cls: str
    shape: str
    text: str
    ok: bool  # falsifying: caught; benign: passed
    passed: bool  # the round is PASS (claims) / the guard let it through (answers)
    reason: str


def _evidence(shape: Shape) -> str:
    """The ref texts and excerpts the shape cites, for the oracle."""
    texts = ref_texts(shape.invocations)
    return "\n".join(
        f"{texts[(b['source_invocation_id'], b['raw_path'])]}\n{b['evidence_excerpt']}"
        for b in shape.bindings
    )


def _claim_outcomes(rng: random.Random) -> Iterator[Outcome]:
    for shape in shapes():
        verdict = judge(shape)
        if shape.paraphrase:
            yield Outcome(PARAPHRASE, shape.name, shape.text, verdict.passed, verdict.passed, "")
        if not verdict.passed:
            if not shape.paraphrase:
                raise AssertionError(f"{shape.name} does not pass: {verdict.reason}")
            continue
        evidence = _evidence(shape)
        for table, falsifying in ((FALSIFYING, True), (BENIGN, False)):
            for cls, edit in table.items():
                for text in dict.fromkeys(edit(rng, shape.text, evidence)):
                    if text == shape.text:
                        continue
                    v = judge(shape, text)
                    ok = (not v.passed and v.status != "SUPPORTED") if falsifying else v.passed
                    yield Outcome(cls, shape.name, text, ok, v.passed, v.reason)
        if shape.claim_type == "observation":
            yield from _answer_outcomes(rng, shape.name, verdict.material, (shape.lang,))


def _answer_outcomes(
    rng: random.Random, name: str, material: ComposerInput, langs: tuple[str, ...]
) -> Iterator[Outcome]:
    for lang in langs:
        for cls, text, added in answers.edits(rng, material, lang):
            ok = answers.guarded(material, text)
            caught = ok if cls in ANSWER_BENIGN else not ok
            yield Outcome(cls, f"{name}-{lang}", text, caught, ok, added)


def _scenario_outcomes(rng: random.Random) -> Iterator[Outcome]:
    for scenario in demo.scenarios():
        verdict = judge_output(scenario.structured_output, "demo", scenario.name)
        yield from _answer_outcomes(rng, scenario.name, verdict.material, ("en", "zh"))


@cache
def run(seed: int = SEED) -> tuple[Outcome, ...]:
    """Every case of the suite; the same seed always gives the same cases."""
    rng = random.Random(seed)
    return (*_claim_outcomes(rng), *_scenario_outcomes(rng))


CLASSES = (*FALSIFYING, *ANSWER_FALSIFYING, PARAPHRASE, *BENIGN, *ANSWER_BENIGN)


def is_benign(cls: str) -> bool:
    return cls == PARAPHRASE or cls in BENIGN or cls in ANSWER_BENIGN


def table(outcomes: tuple[Outcome, ...]) -> str:
    """The per-class table, as docs/groundedness.md shows it (Markdown)."""
    total = Counter(o.cls for o in outcomes)
    good = Counter(o.cls for o in outcomes if o.ok)
    passed = Counter(o.cls for o in outcomes if o.passed)
    lines = [
        "| class | edited | caught | PASS |",
        "|---|---:|---:|---:|",
    ]
    lines += [
        f"| {cls} | {total[cls]} | {good[cls]} | {passed[cls]} |"
        for cls in CLASSES
        if not is_benign(cls)
    ]
    lines += ["", "| benign class | variants | false-rejected | rate |", "|---|---:|---:|---:|"]
    for cls in CLASSES:
        if is_benign(cls):
            bad = total[cls] - good[cls]
            rate = bad / total[cls] if total[cls] else 0.0
            lines.append(f"| {cls} | {total[cls]} | {bad} | {rate:.1%} |")
    return "\n".join(lines)
