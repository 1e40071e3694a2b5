"""Edits of a composed answer: a cause or a version that no allowed material states.

Why answers too: the composer's template answers only quote allowed claims, but
an answer may come from a model or be edited downstream, and the answer guard
is what keeps it to the allowed facts. The answers here are the template
composer's own, for the material of every true claim shape and of every demo
scenario (hypotheses included), in the claim's language (scenarios: both).

The oracle: an inserted cause is a phrase no allowed claim or hypothesis of the
material contains, and an inserted version a string no allowed claim, excerpt,
hypothesis, gap or action contains. The answer as composed is the benign
control: it must pass the guard.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator

from services.composer import compose, guard_material
from tests.support.rulebook import BOOK
from tracebound.events import ComposerInput

_VERSION = re.compile(r"v?\d+(?:\.\d+)+")
CAUSES = {
    "en": (
        ", caused by a traffic spike.",
        " because of the last deploy.",
        ", which led to the checkout errors.",
        " due to GC pressure on the node.",
        "; the root cause is a DNS misconfiguration.",
        ", as a result of a network partition.",
    ),
    "zh": (
        "，这是由于流量突增导致的。",
        "，原因是 DNS 配置错误。",
        "，由上一次发布引起。",
        "，因为节点 GC 压力过大。",
        "，进而造成下单失败。",
    ),
}
VERSIONS = {
    "en": (
        " after the v2.3.1 deploy.",
        " (running version 3.12.0).",
        " since release v1.8 rolled out.",
        ", on image tag 4.0.2.",
    ),
    "zh": (
        "，发生在 v2.3.1 版本发布之后。",
        "（当前运行版本 3.12.0）。",
        "，自 v1.8 上线以来如此。",
    ),
}


def _material_text(material: ComposerInput) -> str:
    parts = [c.claim_text for c in material.allowed_claims]
    parts += [e for c in material.allowed_claims for e in c.evidence_excerpts]
    parts += [*material.allowed_hypotheses, *material.missing_info, *material.recommended_actions]
    return "\n".join(parts).casefold()


def _inserted(answer: str, claim: str, addition: str) -> str:
    """``addition`` right after the claim's sentence, or as the answer's last sentence."""
    stem = claim.rstrip(".。")
    if stem and stem in answer:
        at = answer.index(stem) + len(stem)
        end = at + 1 if answer[at : at + 1] in (".", "。") else at
        return answer[:at] + addition + answer[end:]
    return answer.rstrip() + addition


def edits(rng: random.Random, material: ComposerInput, lang: str) -> Iterator[tuple[str, str, str]]:
    """(class, answer, the inserted text) for one material in one language; class
    ``answer_as_composed`` is the benign control."""
    answer = compose(material, lang, book=BOOK).user_facing_answer
    yield "answer_as_composed", answer, ""
    known = _material_text(material)
    claims = [c.claim_text for c in material.allowed_claims] or [""]
    for cls, table in (("cause_insertion", CAUSES), ("version_insertion", VERSIONS)):
        for addition in rng.sample(table[lang], k=2):
            if any(v.casefold() in known for v in _VERSION.findall(addition)):
                continue
            yield cls, _inserted(answer, rng.choice(claims), addition), addition


def guarded(material: ComposerInput, answer: str) -> bool:
    """Whether the answer guard lets ``answer`` through for ``material``."""
    return guard_material(material, answer, rules=BOOK).ok
