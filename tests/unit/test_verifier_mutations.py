"""Mutated claims over UNTOUCHED real excerpts never PASS; the unchanged claims do.

Every base claim (the demo scenarios' claims plus a few more written over the
same demo excerpts, Chinese ones included) is mutated one fact at a time:

* ``number``   a number changed to a value its evidence does not state;
* ``unit``     a unit changed so the normalised value is no longer stated;
* ``entity``   a service, pod, host, alert or error name swapped for another
               value of the same kind from the demo tool outputs;
* ``negation_inserted`` / ``negation_removed``;
* ``overclaim`` a negative observation turned into "the problem is absent".

The excerpts, bindings and invocations are never touched, so the gatekeeper
still passes every mutant and only the verifier stands between it and PASS.
The oracle is independent of the verifier: a mutant is kept only when its
changed value is absent from the claim's cited evidence (a "changed" number
that the evidence states elsewhere would still be true).

``test_adversarial_suite`` extends this to claims of many more shapes and to
answers, with benign variants and a false-reject rate per class.
"""

from __future__ import annotations

import copy
import random
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from services.verifier import VerifierInput, verify
from services.verifier.facts import extract
from services.verifier.match import number_found
from tests.support import demo_evidence as demo
from tests.support.gate import gate
from tests.support.rulebook import PHRASES, RULES

SEED = 20260708
KINDS = ("number", "unit", "entity", "negation_inserted", "negation_removed", "overclaim")

EXTRA_CLAIMS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    (
        "observation",
        "payment-service 当前存在 HighCPUUsage 告警，CPU 使用率为 92%。",
        demo.CPU_ALERT,
    ),
    (
        "negative_observation",
        "当前查询未检索到 inventory-service 的 HikariCP 连接池耗尽日志。",
        demo.NO_INVENTORY_LOGS,
    ),
    (
        "observation",
        "pod-order-service-5c9d7b8f4-q7n2p was OOMKilled with exit code 137 and restarted 3 times.",
        demo.RESTART_LOG,
    ),
    (
        "observation",
        "payment-service calls to redis-payment-0:6379 fail with "
        "RedisCommandTimeoutException after 2000 ms.",
        demo.REDIS_TIMEOUT_LOG,
    ),
    ("observation", "order-service JVM heap usage is 3.8 GB of 4 GB.", demo.OOM_LOG),
    (
        "observation",
        "HighMemoryUsage fires for order-service at 91% against an 85% threshold for 15 min.",
        demo.MEMORY_ALERT,
    ),
    (
        "observation",
        "order-service HikariPool-1 connections are not available; requests time "
        "out after 30000 ms.",
        demo.POOL_LOG,
    ),
    (
        "observation",
        "user-service P99 is 4200 ms, above the 3 s threshold, for 10 minutes.",
        demo.SLOW_ALERT,
    ),
)

ENTITIES: dict[str, tuple[str, ...]] = {
    "service": ("payment-service", "order-service", "user-service", "inventory-service"),
    "pod": (
        "pod-payment-service-7d8f9c6b5-x2k4m",
        "pod-order-service-5c9d7b8f4-q7n2p",
        "pod-user-service-6b7c8d9e0-m3n8r",
    ),
    "host": ("redis-payment-0:6379", "redis-payment-1:6379", "redis-order-0:6379"),
    "name": (
        "HighCPUUsage",
        "HighMemoryUsage",
        "SlowResponse",
        "HikariPool-1",
        "OOMKilled",
        "HikariCP",
    ),
    "error": ("RedisCommandTimeoutException", "OutOfMemoryError"),
}
ALIASES = {"HikariCP", "HikariPool-1"}
UNIT_SWAPS = {
    "%": " ms",
    "ms": " s",
    "s": " ms",
    "min": " h",
    "minutes": " seconds",
    "GB": " MB",
    "m": " h",
}


@dataclass(frozen=True)
class Base:
    name: str
    structured_output: dict[str, Any]
    tool_invocations: list[dict[str, Any]]
    index: int

    @property
    def claim(self) -> dict[str, Any]:
        claim: dict[str, Any] = self.structured_output["claims"][self.index]
        return claim

    def evidence(self) -> str:
        refs = {
            (inv["id"], ref["raw_path"]): ref["text"]
            for inv in self.tool_invocations
            for ref in inv["retrieval_details"]["evidence_refs"]
        }
        texts = []
        for b in self.claim["evidence_bindings"]:
            texts += [refs[(b["source_invocation_id"], b["raw_path"])], b["evidence_excerpt"]]
        return "\n".join(texts)

    def with_text(self, text: str) -> dict[str, Any]:
        so = copy.deepcopy(self.structured_output)
        so["claims"][self.index]["claim_text"] = text
        return so


def bases() -> list[Base]:
    out = [
        Base(s.name, s.structured_output, s.tool_invocations, i)
        for s in demo.scenarios()
        for i in range(len(s.structured_output["claims"]))
    ]
    for n, (ctype, text, binding) in enumerate(EXTRA_CLAIMS):
        so = demo.output(demo.claim("claim-1", ctype, text, copy.deepcopy(binding)))
        out.append(Base(f"extra-{n}", so, demo.tool_invocations(), 0))
    return out


def run(so: dict[str, Any], invocations: list[dict[str, Any]]) -> Any:
    checked = gate(so, invocations)
    assert checked.result.severity == "none", checked.result.errors
    inp = VerifierInput.model_validate(
        {
            "original_query": "demo",
            "executor_structured_output": checked.structured_output,
            "executor_output_parse_status": {"status": "valid", "detail": ""},
            "gatekeeper_result": checked.result,
        }
    )
    return verify(inp, rules=RULES, phrases=PHRASES)


def _number_mutants(base: Base, rng: random.Random) -> Iterator[tuple[str, str]]:
    text, evidence = base.claim["claim_text"], extract(base.evidence(), rules=RULES)
    for match in re.finditer(
        r"(?<![\w.\-/:])(\d+(?:\.\d+)?)(\s*)(%|ms|s|min|minutes|GB|m)?"
        r"(?![\w])",
        text,
    ):
        value, unit = match.group(1), match.group(3)
        digits = value[::-1] if value[::-1] != value else None
        for candidate in (
            digits,
            str(int(float(value)) + rng.randint(1, 9)),
            str(float(value) * 10).rstrip("0").rstrip("."),
        ):
            if candidate is None:
                continue
            mutated = text[: match.start(1)] + candidate + text[match.end(1) :]
            numbers = extract(mutated, rules=RULES).numbers
            if all(number_found(n, evidence.numbers) for n in numbers):
                continue  # the evidence states the new value: not a falsification
            yield "number", mutated
        if unit in UNIT_SWAPS:
            mutated = text[: match.start(2)] + UNIT_SWAPS[unit] + text[match.end(3) :]
            if not all(
                number_found(n, evidence.numbers) for n in extract(mutated, rules=RULES).numbers
            ):
                yield "unit", mutated


def _entity_mutants(base: Base) -> Iterator[tuple[str, str]]:
    text, evidence = base.claim["claim_text"], base.evidence().casefold()
    for values in ENTITIES.values():
        for value in values:
            if value not in text:
                continue
            for other in values:
                if {value, other} == ALIASES:
                    continue  # the rules declare them one entity: not a falsification
                if other != value and other.casefold() not in evidence:
                    yield "entity", text.replace(value, other)


def _negation_mutants(base: Base) -> Iterator[tuple[str, str]]:
    text = base.claim["claim_text"]
    if base.claim["claim_type"] == "negative_observation":
        for cue, plain in (("found no ", "found "), ("未检索到", "检索到")):
            if cue in text:
                yield "negation_removed", text.replace(cue, plain)
        yield "overclaim", text.rstrip(".。") + ", so the problem does not exist."
        yield "overclaim", text.rstrip(".。") + "，可以排除该问题。"
        subject = re.sub(r"^.*?(?:found no|未检索到)\s*", "", text).rstrip(".。")
        yield "overclaim", f"There is no issue: {subject}."
        return
    for cue, plain in ((" are not ", " are "), (" is not ", " is ")):
        if cue in text:
            yield "negation_removed", text.replace(cue, plain)
    inserted = re.sub(r"\b(is|are|was|were)\b", r"\1 not", text, count=1)
    if inserted != text and " not not" not in inserted:
        yield "negation_inserted", inserted
    if " has a " in text:
        yield "negation_inserted", text.replace(" has a ", " has no ", 1)
    if "存在" in text:
        yield "negation_inserted", text.replace("存在", "不存在", 1)
    first, _, rest = text.partition(" ")
    if rest and not rest.startswith(("not ", "never ")):
        yield "negation_inserted", f"{first} never {rest}"


def mutants(seed: int = SEED) -> list[tuple[str, Base, str]]:
    rng = random.Random(seed)
    out: list[tuple[str, Base, str]] = []
    seen: set[tuple[str, str]] = set()
    for base in bases():
        original = base.claim["claim_text"]
        for kind, text in (
            *_number_mutants(base, rng),
            *_entity_mutants(base),
            *_negation_mutants(base),
        ):
            if text != original and (base.name, text) not in seen:
                seen.add((base.name, text))
                out.append((kind, base, text))
    return out


MUTANTS = mutants()


def test_every_unchanged_claim_is_supported_and_passes() -> None:
    for base in bases():
        outcome = run(base.structured_output, base.tool_invocations)
        assert outcome.verdict == "PASS", (base.name, outcome.rationale)
        assert outcome.claim_checks[base.index].status == "SUPPORTED"


def test_enough_mutants_of_every_kind() -> None:
    counts = Counter(kind for kind, _, _ in MUTANTS)
    assert len(MUTANTS) >= 100
    assert set(counts) == set(KINDS), counts
    assert mutants() == MUTANTS  # seeded: the same list every time


@pytest.mark.parametrize(
    ("kind", "base", "text"),
    MUTANTS,
    ids=[f"{kind}-{base.name}-{n}" for n, (kind, base, _) in enumerate(MUTANTS)],
)
def test_mutated_claim_never_passes(kind: str, base: Base, text: str) -> None:
    outcome = run(base.with_text(text), base.tool_invocations)
    check_ = outcome.claim_checks[base.index]
    assert outcome.verdict != "PASS", (kind, text, check_.reason)
    assert check_.status != "SUPPORTED", (kind, text, check_.reason)
    assert check_.claim_text not in [c.claim_text for c in outcome.composer_input.allowed_claims]
