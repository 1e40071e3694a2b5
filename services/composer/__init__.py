"""Composer: states only what the verifier allowed, and guards every answer.

The deterministic ``rules`` composer turns a verdict's allowed material into a
Chinese or English answer from fixed templates; the answer guard flags
over-claims, numbers and identifiers no allowed claim carries, and restated
rejected claims, in any answer (template or model-written).
"""

from services.composer.compose import ComposedAnswer, compose, negative_subject
from services.composer.guard import enforce, guard, guard_material, safe_answer

__all__ = [
    "ComposedAnswer",
    "compose",
    "enforce",
    "guard",
    "guard_material",
    "negative_subject",
    "safe_answer",
]
